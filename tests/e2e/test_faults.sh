#!/usr/bin/env bash
# The fault suite (the cases exec's own tests don't cover): a full staging
# root, Ctrl-C while staging and while a job runs, two users staging at once,
# 1,000 hostile argument strings, and malformed or fuzzed config files.
# Throughout, bob's trainer runs on the last worker and must never be signalled.
source "$(dirname "$0")/lib.sh"
N=$FAKEPOD_WORKERS
last=$((N - 1))
# Gates the jobs wait for (the workers see the scratch dir).
gates=$(scratch_dir alice)
# bob_trainer: bob's trainer on the last worker, its pid in bob_pid; every
# case starts with it and ends checking it was never signalled. The first case
# starts it and the next ones find it (a failed case's scrub kills it: the
# next case starts another).
bob_trainer() {
  bob_pid=$(cat "$SCRATCH/bob.pid" 2>/dev/null || true)
  # shellcheck disable=SC2016
  if [[ -z $bob_pid ]] ||
    ! fakepod exec "$last" -- sh -c '[ -e /proc/$1 ] && ! grep -q "^State:.*Z" /proc/$1/status' _ "$bob_pid" 2>/dev/null; then
    bob_pid=$(start_trainer_on "$last" bob --forever)
    echo "$bob_pid" >"$SCRATCH/bob.pid"
  fi
}
bob_alive() { fakepod exec "$last" -- kill -0 "$bob_pid" || fail "bob's trainer (pid $bob_pid) was signalled"; }
snapshots() { ls -A "$(srv "$FAKEPOD_NFS/staging/$1")" 2>/dev/null | grep -v '^\.objects$' || true; }
# temp_dirs: alice's staging has a temp dir (a snapshot being made).
temp_dirs() { ls -d "$(srv "$FAKEPOD_NFS/staging/alice")"/.tmp-* 2>/dev/null; }

proj=$(make_project alice proj)
dd if=/dev/urandom of="$proj/weights.bin" bs=1M count=3 status=none
chown alice: "$proj/weights.bin"

full_staging_root() {
  local small cfg
  bob_trainer
  small=/srv/tpurun-small
  mkdir -p "$small"
  mountpoint -q "$small" || mount -t tmpfs -o size=1m,mode=1777 tmpfs "$small"
  on_exit "umount -l $small"
  cfg=$(scratch_dir alice)/small.json
  /usr/bin/python3 - "$FAKEPOD_CONFIG" "$cfg" "$small" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["pods"]["sim"]["staging_root"] = sys.argv[3]
json.dump(c, open(sys.argv[2], "w"))
PY
  chmod 644 "$cfg"
  expect_exit 1 as_user alice -C "$proj" "$TPURUN" --config "$cfg" stage --worker 0-$((last - 1)) -- true
  assert_contains "$ERR" "No space left on device"
  assert_contains "$ERR" "weights.bin"
  assert_eq "$(ls -A "$small/alice" | grep -v '^\.objects$' || true)" "" "partial snapshot left in a full root"
  bob_alive
}
e2e_case full_staging_root "the staging root is full: a clear error naming the file, no partial snapshot"

ctrl_c_while_staging() {
  local big before after client cpid rc
  bob_trainer
  big=$(make_project alice big)
  /usr/bin/python3 - "$big" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(40):
    os.makedirs(f"{root}/d{d}", exist_ok=True)
    for f in range(100):
        with open(f"{root}/d{d}/f{f}.bin", "wb") as out:
            out.write(os.urandom(40000))
PY
  chown -R alice: "$big"
  before=$(snapshots alice)
  as_user alice -C "$big" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --worker 0 -- true >"$SCRATCH/int.out" 2>"$SCRATCH/int.err" &
  client=$!
  cpid=$(client_pid "$client")
  # The interrupt lands while the snapshot is being made: its temp dir is
  # there (or, on a fast machine, the stage is already over).
  staging_or_done() { temp_dirs >/dev/null || ! kill -0 "$client" 2>/dev/null; }
  wait_until "the stage's temp dir in alice's staging" 120 staging_or_done
  kill -INT "$cpid" 2>/dev/null || true
  set +e; wait "$client"; rc=$?; set -e
  if [[ $rc == 0 ]]; then
    note "staging finished before the interrupt landed; the no-partial check still applies"
  else
    assert_eq "$rc" 130
  fi
  assert_eq "$(temp_dirs || true)" "" "temp dir left behind"
  after=$(snapshots alice)
  if [[ $rc != 0 ]]; then assert_eq "$after" "$before" "a snapshot appeared after Ctrl-C"; fi
  bob_alive
}
e2e_case ctrl_c_while_staging "Ctrl-C while staging: exit 130, nothing half-made"

ctrl_c_while_job_runs() {
  local gate=$gates/job-may-end client rc run_id
  bob_trainer
  # The job ends once the gate is there, after the client has detached: with
  # only its 8 steps, a slow machine would see it end before the Ctrl-C.
  rm -f "$gate"
  on_exit "touch '$gate'"
  as_user alice -C "$proj" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --worker 0-$((last - 1)) \
    -- sh -c "python3 train.py --steps 8 --step-time 0.4 && while [ ! -e '$gate' ]; do sleep 0.1; done" \
    >"$SCRATCH/job.out" 2>"$SCRATCH/job.err" &
  client=$!
  wait_until "the job's step 2 in the client's output" 120 grep -q "step 2 " "$SCRATCH/job.out"
  kill -INT "$(client_pid "$client")"
  set +e; wait "$client"; rc=$?; set -e
  assert_eq "$rc" 130
  assert_contains "$(cat "$SCRATCH/job.err")" "its jobs keep running"
  run_id=$(grep -o 'tpurun logs [^ ]* -f' "$SCRATCH/job.err" | awk '{print $3}')
  touch "$gate"
  expect_exit 0 tpurun_as alice -C "$proj" logs "$run_id" -f
  assert_contains "$OUT" "step 8 "
  assert_contains "$ERR" "succeeded: all $last workers exited 0"
  bob_alive
}
e2e_case ctrl_c_while_job_runs "Ctrl-C while a job runs: the client detaches, the job keeps running and finishes"

concurrent_stages() {
  local bobproj pids=() i p
  bob_trainer
  # One stage at a time holds the worker; the others wait their turn (--wait).
  bobproj=$(make_project bob proj)
  for i in $(seq 10); do
    as_user alice -C "$proj" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --detach --json --wait=1 --worker 0 -- true \
      >"$SCRATCH/a$i.json" 2>"$SCRATCH/a$i.err" & pids+=($!)
    as_user bob -C "$bobproj" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --detach --json --wait=1 --worker 0 -- true \
      >"$SCRATCH/b$i.json" 2>"$SCRATCH/b$i.err" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "a concurrent stage failed: $(cat "$SCRATCH"/[ab]*.err)"; done
  /usr/bin/python3 - "$SCRATCH" <<'PY'
import glob, json, os, sys
docs = [json.load(open(f)) for f in glob.glob(sys.argv[1] + "/[ab]*.json")]
assert len(docs) == 20, len(docs)
for key in ("run_id", "log_dir"):
    values = [d[key] for d in docs]
    assert len(set(values)) == 20, (key, values)
# An unchanged tree may share one read-only snapshot (a re-stage reuses it);
# each user's are their own.
for d in docs:
    assert ("/staging/alice/" in d["staged_dir"]) == (d["log_dir"].find("/logs/alice/") >= 0), d
for d in docs:
    assert os.path.isdir(d["staged_dir"]) and os.path.isfile(d["log_dir"] + "/run.json"), d
    assert d["workers"][0]["pid"], d
PY
  bob_alive
}
e2e_case concurrent_stages "two users staging 10 times each, concurrently: no collisions (runs and log dirs are unique)"

hostile_args() {
  local hostile dump want
  bob_trainer
  /usr/bin/python3 - "$SCRATCH/args" <<'PY'
import random, sys
rng = random.Random(1234)
pool = list("'\"`$\\;&|<>(){}[]*?!#~%^=,.:-_ \t\n") + ["\u00e9", "\u2713", "\U0001F600", "\u200b", "$(id)", "${HOME}", "`id`", "\\'", "'\\''", "--", "-n"]
pool += [chr(c) for c in range(1, 32)] + [chr(c) for c in range(0x20, 0x7f)]
with open(sys.argv[1], "wb") as out:
    for i in range(1000):
        s = "".join(rng.choice(pool) for _ in range(rng.randint(0, 24)))
        out.write(s.encode() + b"\0")
PY
  mapfile -d '' -t hostile <"$SCRATCH/args"
  assert_eq "${#hostile[@]}" 1000
  dump='import json,sys; print(json.dumps(sys.argv[1:]))'
  want=$(/usr/bin/python3 -c "$dump" "${hostile[@]}")
  expect_exit 0 tpurun_as alice exec --worker 0,3 --json -- python3 -c "$dump" "${hostile[@]}"
  /usr/bin/python3 - "$OUT" "$want" <<'PY'
import json, sys
doc = json.loads(sys.argv[1]); want = sys.argv[2] + "\n"
assert len(doc["workers"]) == 2
for w in doc["workers"]:
    got = json.loads(w["stdout"]); exp = json.loads(want)
    bad = [i for i, (a, b) in enumerate(zip(got, exp)) if a != b]
    assert got == exp, ("worker", w["worker"], "first differing args", bad[:5])
PY
  bob_alive
}
e2e_case hostile_args "1,000 generated hostile strings round-trip verbatim"

fuzzed_configs() {
  local fuzz=$SCRATCH/fuzz parsed=0 rejected=0 f rc
  bob_trainer
  mkdir -p "$fuzz"
  /usr/bin/python3 - "$FAKEPOD_CONFIG" "$fuzz" <<'PY'
import json, random, sys
base = open(sys.argv[1]).read()
rng = random.Random(99)
cases = ['{', '}', '{"pods": 3}', '{"pods": {"sim": {}}}', '{"default_pod": "nope", "pods": {}}',
         base.replace('"workers"', '"wrokers"'), base.replace('"accept-new"', '"maybe"'),
         base.replace('5', '"five"', 1), base + "junk", base.replace(",", ",,", 1), "\xff\xfe garbage",
         base.replace('"sim"', '"sim", "sim"', 1), "[" * 1000, '{"pods": {"sim": {"workers": ["::::"]}}}']
for i in range(150):
    s = list(base)
    for _ in range(rng.randint(1, 4)):
        op = rng.random(); pos = rng.randrange(len(s))
        if op < 0.4: del s[pos]
        elif op < 0.7: s.insert(pos, rng.choice('{}[]:,"\\/*\n 0x-'))
        else: s[pos] = rng.choice('{}[]:,"\\/*\n 0x-')
    cases.append("".join(s))
for i, c in enumerate(cases):
    open(f"{sys.argv[2]}/c{i:03d}.json", "w", errors="surrogateescape").write(c)
PY
  chmod -R a+rX "$fuzz"
  for f in "$fuzz"/c*.json; do
    rc=0
    as_user alice "$TPURUN" --config "$f" exec --dry-run -- true >"$SCRATCH/f.out" 2>"$SCRATCH/f.err" || rc=$?
    if (( rc >= 128 )); then fail "tpurun crashed (exit $rc) on $f: $(cat "$SCRATCH/f.err")"; fi
    if (( rc == 0 )); then parsed=$((parsed + 1)); continue; fi
    assert_eq "$rc" 2 "exit code for a bad config ($f)"
    grep -qE "^tpurun: error: .*$(basename "$f")(:[0-9]+)?" "$SCRATCH/f.err" || fail "no file:line in: $(cat "$SCRATCH/f.err")"
    rejected=$((rejected + 1))
  done
  note "fuzzed configs: $rejected rejected with file:line, $parsed still valid"
  (( rejected >= 100 )) || fail "expected most mutations to be rejected"
  bob_alive
}
e2e_case fuzzed_configs "malformed and fuzzed configs: file:line errors, exit 2, never a crash"

e2e_run
