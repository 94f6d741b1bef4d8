#!/usr/bin/env bash
# The fault suite (the cases exec's own tests don't cover): a full staging
# root, Ctrl-C while staging and while a job runs, two users staging at once,
# 1,000 hostile argument strings, and malformed or fuzzed config files.
# Throughout, bob's trainer runs on the last worker and must never be signalled.
source "$(dirname "$0")/lib.sh"
N=$FAKEPOD_WORKERS
last=$((N - 1))
bob_pid=$(start_trainer_on "$last" bob --forever)
bob_alive() { fakepod exec "$last" -- kill -0 "$bob_pid" || fail "bob's trainer (pid $bob_pid) was signalled"; }
snapshots() { ls -A "$FAKEPOD_NFS/staging/$1" 2>/dev/null | grep -v '^\.objects$' || true; }

proj=$(make_project alice proj)
dd if=/dev/urandom of="$proj/weights.bin" bs=1M count=3 status=none
chown alice: "$proj/weights.bin"

# -- The staging root is full: a clear error naming the file, no partial snapshot.
small=/srv/tpurun-small
mkdir -p "$small"
mountpoint -q "$small" || mount -t tmpfs -o size=1m,mode=1777 tmpfs "$small"
on_exit "umount -l $small"
cfg=$(scratch_dir alice)/small.json
python3 - "$FAKEPOD_CONFIG" "$cfg" "$small" <<'PY'
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

# -- Ctrl-C while staging: exit 130, nothing half-made.
big=$(make_project alice big)
python3 - "$big" <<'PY'
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
for _ in $(seq 200); do
  ls -d $FAKEPOD_NFS/staging/alice/.tmp-* >/dev/null 2>&1 && break
  sleep 0.02
done
kill -INT "$(pgrep -P "$client" | head -1)" 2>/dev/null || true
set +e; wait "$client"; rc=$?; set -e
if [[ $rc == 0 ]]; then
  note "staging finished before the interrupt landed; the no-partial check still applies"
else
  assert_eq "$rc" 130
fi
assert_eq "$(ls -d $FAKEPOD_NFS/staging/alice/.tmp-* 2>/dev/null || true)" "" "temp dir left behind"
after=$(snapshots alice)
if [[ $rc != 0 ]]; then assert_eq "$after" "$before" "a snapshot appeared after Ctrl-C"; fi
bob_alive

# -- Ctrl-C while a job runs: the client detaches, the job keeps running and finishes.
as_user alice -C "$proj" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --worker 0-$((last - 1)) \
  -- python3 train.py --steps 8 --step-time 0.4 >"$SCRATCH/job.out" 2>"$SCRATCH/job.err" &
client=$!
for _ in $(seq 100); do grep -q "step 2 " "$SCRATCH/job.out" 2>/dev/null && break; sleep 0.1; done
kill -INT "$(pgrep -P "$client" | head -1)"
set +e; wait "$client"; rc=$?; set -e
assert_eq "$rc" 130
assert_contains "$(cat "$SCRATCH/job.err")" "its jobs keep running"
run_id=$(grep -o 'tpurun logs [^ ]* -f' "$SCRATCH/job.err" | awk '{print $3}')
expect_exit 0 tpurun_as alice -C "$proj" logs "$run_id" -f
assert_contains "$OUT" "step 8 "
assert_contains "$ERR" "succeeded: all $last workers exited 0"
bob_alive

# -- Two users staging 10 times each, concurrently: no collisions (runs and log dirs are unique).
# One stage at a time holds the worker; the others wait their turn (--wait).
bobproj=$(make_project bob proj)
pids=()
for i in $(seq 10); do
  as_user alice -C "$proj" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --detach --json --wait=1 --worker 0 -- true \
    >"$SCRATCH/a$i.json" 2>"$SCRATCH/a$i.err" & pids+=($!)
  as_user bob -C "$bobproj" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --detach --json --wait=1 --worker 0 -- true \
    >"$SCRATCH/b$i.json" 2>"$SCRATCH/b$i.err" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent stage failed: $(cat "$SCRATCH"/[ab]*.err)"; done
python3 - "$SCRATCH" <<'PY'
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

# -- 1,000 generated hostile strings round-trip verbatim.
python3 - "$SCRATCH/args" <<'PY'
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
want=$(python3 -c "$dump" "${hostile[@]}")
expect_exit 0 tpurun_as alice exec --worker 0,3 --json -- python3 -c "$dump" "${hostile[@]}"
python3 - "$OUT" "$want" <<'PY'
import json, sys
doc = json.loads(sys.argv[1]); want = sys.argv[2] + "\n"
assert len(doc["workers"]) == 2
for w in doc["workers"]:
    got = json.loads(w["stdout"]); exp = json.loads(want)
    bad = [i for i, (a, b) in enumerate(zip(got, exp)) if a != b]
    assert got == exp, ("worker", w["worker"], "first differing args", bad[:5])
PY
bob_alive

# -- Malformed and fuzzed configs: file:line errors, exit 2, never a crash.
fuzz=$SCRATCH/fuzz
mkdir -p "$fuzz"
python3 - "$FAKEPOD_CONFIG" "$fuzz" <<'PY'
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
parsed=0 rejected=0
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
pass
