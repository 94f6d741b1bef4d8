#!/usr/bin/env bash
# Issue 9, the hosts half: attacks by bob (another user of the pod's hosts and
# of the shared mount) on alice, an admin, and what stops them.
#  - a symlink planted at the old shared audit log path cannot redirect
#    `kill --force --yes` into alice's ~/.bashrc: the record goes to alice's
#    own audit file and, as root, to the worker's syslog;
#  - with no syslog on a worker, --force signals nothing there;
#  - a link target with a newline (a file bob opens in his own mount
#    namespace) cannot forge a `hold` record that points alice's status and
#    kill at one of her unrelated processes;
#  - --env TPURUN_* is refused, and a secret passed with --env, --env-file or
#    --env-from reaches the job but no file under logs_root, `runs --json` or
#    the dry run;
#  - gcloud pods verify each worker's key under gcloud's HostKeyAlias in
#    ~/.ssh/google_compute_known_hosts: `hostkeys --import` makes "strict" work,
#    and a key that differs from gcloud's record is refused.
source "$(dirname "$0")/lib.sh"
require_tpurun
((FAKEPOD_WORKERS >= 4)) || skip "needs 4 workers, the pod has $FAKEPOD_WORKERS"

alive() {  # W PID
  # shellcheck disable=SC2016
  wexec "$1" -- sh -c '[ -e /proc/$1 ] && ! grep -q "^State:.*Z" /proc/$1/status' _ "$2" 2>/dev/null
}

# ------------------------------------------------------------------ planted audit-log symlink
planted_audit_symlink() {
  local bashrc bashrc_sum planted audit before=0 sys_before=0 bob1 entry syslog
  bashrc=$(user_home alice)/.bashrc
  [[ -f $bashrc ]] || install -m 644 -o alice -g "$(id -gn alice)" /dev/null "$bashrc"
  bashrc_sum=$(sha256sum <"$bashrc")
  cp -p "$bashrc" "$SCRATCH/bashrc.saved"
  on_exit "cp -p '$SCRATCH/bashrc.saved' '$bashrc'"  # should this case ever fail
  planted=$FAKEPOD_NFS/logs/tpurun-audit.log
  if [[ -e $planted || -L $planted ]]; then
    mv "$planted" "$SCRATCH/audit.log.saved"
    on_exit "mv -f '$SCRATCH/audit.log.saved' '$planted'"
  fi
  on_exit "rm -f '$planted'"
  as_user bob ln -s "$bashrc" "$planted"
  [[ -L $planted ]] || fail "bob could not plant the symlink"

  audit=$(user_home alice)/.local/state/tpurun/audit.jsonl
  [[ -f $audit ]] && before=$(wc -l <"$audit")
  [[ -f $FAKEPOD_STATE/w1/syslog ]] && sys_before=$(wc -l <"$FAKEPOD_STATE/w1/syslog")
  bob1=$(start_trainer_on 1 bob --forever)
  expect_exit 0 tpurun_as alice kill --worker 1 --force --yes --grace 2s
  assert_eq "$(sha256sum <"$bashrc")" "$bashrc_sum" "alice's ~/.bashrc was written through bob's symlink"
  alive 1 "$bob1" && fail "bob's job on w1 should be dead after --force --yes"
  assert_contains "$ERR" "recorded in $audit"
  entry=$(tail -n +$((before + 1)) "$audit")
  assert_contains "$entry" "\"pid\":$bob1,"
  assert_contains "$entry" '"event":"kill-force"'
  /usr/bin/python3 -c 'import json, sys; [json.loads(l) for l in sys.stdin]' <<<"$entry" || fail "not JSON lines: $entry"
  [[ $(stat -c '%U %a' "$audit") == "alice 600" ]] || fail "audit file: $(stat -c '%U %a' "$audit")"
  syslog=$(tail -n +$((sys_before + 1)) "$FAKEPOD_STATE/w1/syslog")
  assert_contains "$syslog" "uid=0 "
  assert_contains "$syslog" "kill --force by alice"
  assert_contains "$syslog" "pid=$bob1 "
}
e2e_case planted_audit_symlink "a symlink bob planted at the old shared audit log: kill --force --yes writes alice's own audit file and the syslog, never her ~/.bashrc"

# ------------------------------------------------------------------ no syslog, no signal
no_syslog_no_signal() {
  local bob2
  bob2=$(start_trainer_on 2 bob --forever)
  wexec 2 -- mv /dev/log /dev/log.off
  on_exit "wexec 2 -- mv -f /dev/log.off /dev/log"
  expect_exit 1 tpurun_as alice kill --worker 2 --force --yes --grace 1s
  assert_contains "$OUT$ERR" "nothing was signalled"
  assert_contains "$OUT$ERR" "syslog"
  alive 2 "$bob2" || fail "bob's job on w2 was signalled although the worker could not audit it"
  wexec 2 -- mv -f /dev/log.off /dev/log
}
e2e_case no_syslog_no_signal "with no syslog on a worker, kill --force signals nothing there"

# ------------------------------------------------------------------ forged link target
forged_link_target() {
  local alice3 forged bob3
  # alice's unrelated process on w3: no TPU, no tpurun run.
  # shellcheck disable=SC2016
  alice3=$(wexec 3 --user alice -- bash -c '( exec setsid sleep 600 </dev/null >/dev/null 2>&1 ) & echo $!')
  on_exit "wexec 3 -- kill -9 $alice3"
  # bob, in his own user and mount namespace, opens a "device" whose name forges
  # a find record for alice's pid.
  forged=$'/dev/accel0\nH /proc/'"$alice3"$'/fd /dev'
  # shellcheck disable=SC2016
  bob3=$(wexec 3 --user bob -- bash -c '( exec setsid unshare -Urm sh -c '\''
    mount -t tmpfs forged /dev && mkdir -p "$1" && : >"$1/accel0" && exec 3<"$1/accel0" && exec sleep 600'\'' _ "$0" \
    </dev/null >/dev/null 2>&1 ) & echo $!' "$forged")
  on_exit "wexec 3 -- kill -9 $bob3"
  # forged_open: bob's process holds the forged "device" open.
  forged_open() {
    # shellcheck disable=SC2016
    wexec 3 -- sh -c 'find /proc/[0-9]*/fd -maxdepth 1 -lname "/dev/accel*" -printf "%l\n" 2>/dev/null' |
      grep -qx "H /proc/$alice3/fd /dev/accel0"
  }
  # bob's process (one pid from setsid to sleep) either opens it or ends:
  # where unprivileged user namespaces are not available, unshare fails.
  wait_until "bob's forged device to be open, or his namespace to fail" 120 eval 'forged_open || ! alive 3 "$bob3"'
  forged_open || skip "unprivileged user namespaces are not available on this host: the forged link target was not staged"
  expect_exit 0 tpurun_as alice status --worker 3
  assert_contains "$OUT" "free"
  assert_not_contains "$OUT" "busy"
  tpurun_as alice kill --worker 3 --grace 1s >/dev/null 2>&1 || true
  alive 3 "$alice3" || fail "alice's unrelated process on w3 was killed through bob's forged record"
}
e2e_case forged_link_target "a link target with a newline, opened by bob in his own mount namespace, cannot point alice's status and kill at her unrelated process"

# ------------------------------------------------------------------ --env
env_secrets() {
  local proj
  proj=$(make_project alice envproj)
  expect_exit 2 tpurun_as alice -C "$proj" stage --env TPURUN_RUN_ID=x -- true
  assert_contains "$ERR" "TPURUN_RUN_ID is tpurun's own variable"
  printf '# secrets\nFILE_TOKEN=SECRETFILE9b\n' >"$proj/job.env"
  chown alice: "$proj/job.env"
  expect_exit 2 tpurun_as alice -C "$proj" stage --env-from NOT_SET_9B -- true
  assert_contains "$ERR" "NOT_SET_9B is not set here"
  AS_USER_ENV="ENV_TOKEN=SECRETFROM9b" expect_exit 0 tpurun_as alice -C "$proj" stage --dry-run \
    --env FLAG_TOKEN=SECRETFLAG9b --env-file job.env --env-from ENV_TOKEN -- true
  assert_contains "$OUT" "env ENV_TOKEN=<value hidden>"
  assert_not_contains "$OUT$ERR" "SECRET"
  # The job prints a hash of the values it got, never the values.
  AS_USER_ENV="ENV_TOKEN=SECRETFROM9b" expect_exit 0 tpurun_as alice -C "$proj" stage --worker 0 --skip-preflight \
    --env FLAG_TOKEN=SECRETFLAG9b --env-file job.env --env-from ENV_TOKEN -- \
    sh -c 'echo "got $(printf %s "$FLAG_TOKEN,$FILE_TOKEN,$ENV_TOKEN" | sha256sum | cut -c1-16)"'
  assert_contains "$OUT" "got $(printf %s "SECRETFLAG9b,SECRETFILE9b,SECRETFROM9b" | sha256sum | cut -c1-16)"
  assert_not_contains "$OUT$ERR" "SECRET"
  if grep -rl SECRET "$(srv "$FAKEPOD_NFS/logs/alice")"; then fail "a secret value is in a file under logs_root"; fi
  expect_exit 0 tpurun_as alice runs --json
  assert_not_contains "$OUT" "SECRET"
  assert_contains "$OUT" "envproj"
}
e2e_case env_secrets "--env TPURUN_* is refused; a secret from --env, --env-file or --env-from reaches the job, never logs_root, runs --json or the dry run"

# ------------------------------------------------------------------ gcloud host keys
gcloud_host_keys() {
  local gck nid cfg empty_known other
  gck=$(user_home alice)/.ssh/google_compute_known_hosts
  if [[ -e $gck ]]; then
    mv "$gck" "$SCRATCH/gck.saved"
    on_exit "mv -f '$SCRATCH/gck.saved' '$gck'"
  else
    on_exit "rm -f '$gck'"
  fi
  nid=$(json_file "$FAKEPOD_STATE/gcloud-describe.json" 'd["id"]')
  cfg=$(user_dir alice)/gcloud-pod.json
  empty_known=$(user_dir alice)/empty_known_hosts
  as_user alice touch "$empty_known"
  cat >"$cfg" <<JSON
{ "pods": { "g": { "gcloud": { "name": "sim-tpu", "zone": "us-central2-b" },
                   "ssh": { "identity_file": "~/.ssh/id_ed25519", "known_hosts": "$empty_known",
                            "host_key_policy": "strict", "connect_timeout_s": 5 },
                   "staging_root": "$FAKEPOD_NFS/staging", "logs_root": "$FAKEPOD_NFS/logs" } } }
JSON
  chmod 644 "$cfg"
  g() { as_user alice "$TPURUN" --config "$cfg" --pod g "$@"; }
  expect_exit 255 g exec --worker 0 -- true
  assert_contains "$OUT$ERR" "host key not known"
  expect_exit 1 g hostkeys
  assert_contains "$OUT" "tpu.$nid-0"
  assert_contains "$OUT" "not recorded"
  expect_exit 0 g hostkeys --import --dry-run
  assert_contains "$OUT" "gcloud compute tpus tpu-vm ssh sim-tpu --zone us-central2-b --internal-ip --worker=all --command=true"
  [[ -e $gck ]] && fail "--dry-run ran gcloud"
  expect_exit 0 g hostkeys --import
  assert_not_contains "$OUT" "not recorded"
  expect_exit 0 g hostkeys --json
  /usr/bin/python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert len(d["workers"]) == int(sys.argv[2]) and all(
      w["recorded"] and w["alias"] == "tpu.%s-%d" % (sys.argv[3], w["worker"]) for w in d["workers"]), d' \
    "$OUT" "$FAKEPOD_WORKERS" "$nid" || fail "hostkeys --json: $OUT"
  expect_exit 0 g exec -- true
  # A key that is not the worker's, filed under w0's alias: refused.
  other=$(grep "^tpu\.$nid-1-" "$gck" | awk '{print $2, $3}' | head -1)
  sed -i "s|^\(tpu\.$nid-0-[^ ]*\) .*|\1 $other|" "$gck"
  expect_exit 255 g exec --worker 0 -- true
  assert_contains "$OUT$ERR" "differs from the one gcloud recorded for tpu.$nid-0"
  expect_exit 0 g exec --worker 1 -- true
}
e2e_case gcloud_host_keys "gcloud pods check each worker's key under gcloud's alias: hostkeys --import makes strict work; a key unlike gcloud's record is refused"

e2e_run
