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

e2e_run
