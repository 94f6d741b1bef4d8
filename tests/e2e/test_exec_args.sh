#!/usr/bin/env bash
# Hostile arguments arrive verbatim on every worker; with no config at all the
# "pod" is this host and commands run locally, without SSH.
source "$(dirname "$0")/lib.sh"

args=("plain" "two words" "it's" "\"dq\"" '$(touch /tmp/pwned)' '`id`' 'a;b' 'x && y' $'line1\nline2'
      $'tab\there' 'back\slash' 'glob*?[a]' '~' '-n' '--' 'ünïcødé ✓' "'" "''" '$HOME' '!bang' '#h'
      '{a,b}' 'trailing\' '%s%n' ' lead' 'trail ' '')
dump='import json,sys; print(json.dumps(sys.argv[1:]))'
want=$(/usr/bin/python3 -c "$dump" "${args[@]}")

verbatim_on_workers() {
  local i
  expect_exit 0 tpurun_as alice exec --json -- python3 -c "$dump" "${args[@]}"
  /usr/bin/python3 - "$OUT" "$want" "$FAKEPOD_WORKERS" <<'PY'
import json, sys
doc = json.loads(sys.argv[1]); want = sys.argv[2] + "\n"
assert len(doc["workers"]) == int(sys.argv[3])
for w in doc["workers"]:
    assert w["stdout"] == want, (w["worker"], w["stdout"], want)
PY
  for i in 0 3; do
    if fakepod exec "$i" -- test -e /tmp/pwned; then fail "an argument was executed on worker $i"; fi
  done
}
e2e_case verbatim_on_workers "hostile arguments arrive verbatim on every worker, and none is executed"

no_config_local() {
  local dir
  dir=$(scratch_dir alice)/noconfig
  as_user alice mkdir -p "$dir"
  expect_exit 0 as_user alice env -C "$dir" XDG_CONFIG_HOME="$dir/xdg" "$TPURUN" exec -- python3 -c "$dump" "${args[@]}"
  assert_eq "$OUT" "[w0 localhost] $(head -c -0 <<<"$want")"
}
e2e_case no_config_local "no config anywhere: the local host is the pod, and the arguments arrive verbatim there too"

# The README's first promise, as a new user meets it: a fresh HOME, no config
# file anywhere, XDG_CONFIG_HOME empty. Every call is bounded (E2E_TIMEOUT):
# a follower that never ends fails here in a minute.
no_config_stage() {
  local fresh run dir
  fresh=$(scratch_dir alice)/freshhome
  install -d -m 755 -o alice "$fresh" "$fresh/proj"
  printf 'print("hello from main")\n' >"$fresh/proj/main.py"
  chown alice "$fresh/proj/main.py"
  lt() { E2E_TIMEOUT=60 AS_USER_ENV="HOME=$fresh XDG_CONFIG_HOME=" as_user alice -C "$fresh/proj" "$TPURUN" "$@"; }
  # --skip-preflight: with no config the pod is this host, and this host sees
  # every lane's simulated workers' processes, whose fake trainers hold
  # /dev/accel0 (in their own mount namespaces) whenever another test runs
  # one; the preflight itself is test_preflight's, on a pod.
  expect_exit 0 lt stage --skip-preflight -- /usr/bin/python3 main.py
  assert_contains "$OUT" "[w0 localhost] hello from main"
  assert_not_contains "$ERR" "no config file"
  assert_not_contains "$ERR" "has no watcher"
  assert_contains "$ERR" "succeeded"
  run=$(sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' <<<"$ERR")
  [[ -n $run ]] || fail "no run id in: $ERR"
  expect_exit 0 lt runs --json
  assert_eq "$(json_get "$OUT" 'd["runs"][0]["verdict"]')" succeeded "runs' verdict"
  # With no state.json (as when no watcher ever wrote one), the exit records
  # settle the run: for runs, and for a follower, which ends.
  dir=$(json_get "$OUT" 'd["runs"][0]["log_dir"]')
  rm "$dir/state.json"
  expect_exit 0 lt runs --json
  assert_eq "$(json_get "$OUT" 'd["runs"][0]["verdict"]')" succeeded "runs' verdict from the records"
  assert_eq "$(json_get "$OUT" 'd["runs"][0]["from_records"]')" True "from the records"
  expect_exit 0 lt logs "$run" -f
  assert_contains "$OUT" "hello from main"
}
e2e_case no_config_stage "no config, a fresh HOME: stage runs the job, its watcher watches, it ends; with no state.json the records settle it"

# `stage` from the home dir itself (no project): what runs sees the files,
# never the key, the cloud credentials or tpurun's own logs.
home_dir_stage() {
  local fresh
  fresh=$(scratch_dir alice)/homestage
  install -d -m 755 -o alice "$fresh"
  install -d -m 700 -o alice "$fresh/.ssh" "$fresh/.config" "$fresh/.config/gcloud" "$fresh/.tpurun"
  printf 'PRIVATE KEY\n' >"$fresh/.ssh/id_ed25519"
  printf 'token\n' >"$fresh/.config/gcloud/credentials.db"
  printf 'print("home job")\n' >"$fresh/main.py"
  chown -R alice "$fresh"
  # --skip-preflight: this host is the pod, as in no_config_stage.
  E2E_TIMEOUT=60 AS_USER_ENV="HOME=$fresh XDG_CONFIG_HOME=" expect_exit 0 as_user alice -C "$fresh" "$TPURUN" \
    stage --skip-preflight -- sh -c '/usr/bin/python3 main.py; find . -path ./.tpurun -prune -o -type f -print | sort'
  assert_contains "$OUT" "home job"
  assert_contains "$OUT" "./main.py"
  assert_not_contains "$OUT" ".ssh"
  assert_not_contains "$OUT" "credentials.db"
  assert_contains "$ERR" "this is your home directory, not a project"
  assert_contains "$ERR" ".ssh, .config/gcloud, .tpurun"
}
e2e_case home_dir_stage "stage from a home dir: the job gets its files but not ~/.ssh, the gcloud credentials or ~/.tpurun, and is told why"

e2e_run
