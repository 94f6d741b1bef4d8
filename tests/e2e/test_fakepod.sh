#!/usr/bin/env bash
# Self-test of the pod simulator (scripts/fakepod), the fake trainer and the
# gcloud stub, with plain OpenSSH only (no tpurun needed).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

N=$FAKEPOD_WORKERS
((N >= 6)) || skip "needs at least 6 workers (FAKEPOD_WORKERS=$N)"
T=$(trainer_path)
ALICE_KH=$(user_dir alice)/known_hosts

# Processes that belong to the pod, seen from the host: the unshare parents,
# everything inside a worker PID namespace, and blackhole listeners.
pod_processes() {
  local me p ns cmd
  me=$(readlink /proc/self/ns/pid)
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    ns=$(readlink "/proc/$p/ns/pid" 2>/dev/null) || continue
    cmd=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
    if [[ $ns != "$me" ]] || [[ $cmd == "unshare "*"$FAKEPOD_STATE/init.sh"* ]] ||
      [[ $cmd == *"$FAKEPOD_STATE/blackhole.py"* ]]; then
      echo "$p $cmd"
    fi
  done
}

# ------------------------------------------------------------ reachability
note "every worker answers over ssh with its own TPU_WORKER_ID"
hosts=$(for ((i = 0; i < N; i++)); do printf '%s%s' "${i:+,}" "$(worker_ip "$i")"; done)
hosts=${hosts#,}
for ((i = 0; i < N; i++)); do
  expect_exit 0 ssh_as alice "$i" 'echo "$TPU_WORKER_ID|$TPU_WORKER_HOSTNAMES|$(hostname)|$(id -un)"'
  assert_eq "$OUT" "$i|$hosts|$(worker_hostname "$i")|alice" "worker $i identity"
done
expect_exit 0 ssh_as bob 3 'echo $TPU_WORKER_ID'
assert_eq "$OUT" 3
expect_exit 0 ssh_as carol 4 'echo $TPU_WORKER_ID'
assert_eq "$OUT" 4

note "sudo: alice yes (no 'unable to resolve host' noise), carol no"
expect_exit 0 ssh_as alice 2 'sudo -n id -un'
assert_eq "$OUT" root
assert_not_contains "$ERR" "unable to resolve"
expect_exit nonzero ssh_as carol 2 'sudo -n true'

note "fakepod exec passes stdout, stderr and exit codes through"
expect_exit 7 wexec 2 --user bob -- bash -c 'echo out; echo err >&2; echo "$USER $HOME $TPU_WORKER_ID $PWD"; exit 7'
assert_eq "$OUT" "out
bob /home/bob 2 /home/bob"
assert_eq "$ERR" "err"

# ------------------------------------------------------------ per-worker state
note "/tmp is private per worker"
tag=fakepod-selftest-$$
expect_exit 0 ssh_as alice 0 "echo w0 >/tmp/$tag && cat /tmp/$tag"
assert_eq "$OUT" w0
expect_exit 0 ssh_as alice 1 "test ! -e /tmp/$tag && stat -c %a /tmp"
assert_eq "$OUT" 1777
[[ ! -e /tmp/$tag ]] || fail "/tmp/$tag leaked to the host"
wexec 0 -- rm -f "/tmp/$tag"

note "TPU device files exist, mode 0666, and nothing leaks into the host's /dev"
expect_exit 0 ssh_as carol 2 'ls /dev/accel*; stat -c %a /dev/accel0; test -w /dev/accel3 && echo writable'
assert_eq "$OUT" "/dev/accel0
/dev/accel1
/dev/accel2
/dev/accel3
666
writable"
[[ ! -e /dev/accel0 ]] || fail "the host has /dev/accel0"
expect_exit 0 ssh_as alice 2 'test -c /dev/null && test -c /dev/urandom && head -c4 /dev/zero | wc -c'
assert_eq "$OUT" 4

note "the NFS dir is shared"
mkdir -p "$FAKEPOD_NFS/staging"
expect_exit 0 ssh_as alice 3 "echo shared-$$ >$FAKEPOD_NFS/staging/$tag"
assert_eq "$(cat "$FAKEPOD_NFS/staging/$tag")" "shared-$$"
expect_exit 0 ssh_as bob 5 "cat $FAKEPOD_NFS/staging/$tag; stat -c %a $FAKEPOD_NFS/staging $FAKEPOD_NFS/logs"
assert_eq "$OUT" "shared-$$
1777
1777"
rm -f "$FAKEPOD_NFS/staging/$tag"

note "the PID namespace shows only the worker's own processes"
pidA=$(start_trainer_on 1 alice --forever)
expect_exit 0 wexec 5 -- ps -e -o pid=,args=
assert_not_contains "$OUT" "train.py" "worker 5 sees worker 1's trainer"
first=$(echo "$OUT" | head -n1 | awk '{print $1, $2}')
assert_eq "$first" "1 bash" "PID 1 of worker 5"
nprocs=$(echo "$OUT" | wc -l)
((nprocs <= 4)) || fail "worker 5 sees $nprocs processes: $OUT"
expect_exit 0 ssh_as alice 1 'ps -e -o pid=,user=,args='
assert_eq "$(echo "$OUT" | awk -v p="$pidA" '$1 == p {print $2, $3, $4, $5}')" "alice python3 $T --forever" \
  "worker 1 sees alice's trainer"

# ------------------------------------------------------------ trainer semantics
note "alice's trainer holds the lockfile and the devices"
expect_exit 0 wexec 1 -- stat -c '%U %a' /tmp/libtpu_lockfile
assert_eq "$OUT" "alice 600"
expect_exit 0 wexec 1 -- cat /tmp/libtpu_lockfile
assert_eq "$OUT" "$pidA"
holders=$(tpu_holders 1)
assert_contains "$holders" "$pidA alice /dev/accel0"
assert_contains "$holders" "$pidA alice /dev/accel3"

note "bob is blocked by alice's 0600 lockfile"
expect_exit 1 wexec 1 --user bob -- python3 "$T" --steps 1
assert_contains "$ERR" 'The TPU is already in use by another process probably owned by another user. Run "$ sudo lsof -w /dev/accel0" to figure out which process is using the TPU. If you still get this message, run "$ sudo rm /tmp/libtpu_lockfile".'

note "a second alice trainer names the holder's pid"
expect_exit 1 wexec 1 --user alice -- python3 "$T" --steps 1
assert_contains "$ERR" "The TPU is already in use by process with pid $pidA. Not attempting to load libtpu.so in this process."

note "SIGKILL leaves a stale lockfile but frees the devices"
wexec 1 -- kill -9 "$pidA"
expect_exit 0 wexec 1 -- bash -c "for _ in \$(seq 100); do kill -0 $pidA 2>/dev/null || exit 0; sleep 0.05; done; exit 1"
expect_exit 0 wexec 1 -- stat -c '%U' /tmp/libtpu_lockfile
assert_eq "$OUT" alice "stale lockfile"
assert_eq "$(tpu_holders 1)" "" "device holders after SIGKILL"
expect_exit 0 wexec 1 -- ps -e -o stat=
assert_not_contains "$OUT" Z "zombie after SIGKILL (reaping)"
expect_exit 1 wexec 1 --user bob -- python3 "$T" --steps 1
assert_contains "$ERR" "probably owned by another user" "stale lockfile blocks bob"

note "the stale lockfile does not block its owner; a normal exit removes it"
expect_exit 0 wexec 1 --user alice -- python3 "$T" --steps 2 --step-time 0.05
assert_contains "$OUT" "worker 1 step 2 loss"
assert_contains "$OUT" "holds /dev/accel0 /dev/accel1 /dev/accel2 /dev/accel3"
expect_exit 1 wexec 1 -- test -e /tmp/libtpu_lockfile

note "another user's /tmp/tpu_logs is only noise; --exit-code"
expect_exit 3 wexec 1 --user bob -- python3 "$T" --steps 1 --step-time 0.05 --exit-code 3
assert_contains "$ERR" "Could not open the log file '/tmp/tpu_logs/"
assert_contains "$ERR" "Permission denied"
assert_contains "$OUT" "worker 1 step 1 loss"

note "SIGTERM: clean shutdown, exit 143, lockfile removed"
expect_exit 143 wexec 1 --user bob -- timeout --preserve-status -s TERM 1 python3 "$T" --forever --step-time 0.1
assert_contains "$OUT" "got SIGTERM"
expect_exit 1 wexec 1 -- test -e /tmp/libtpu_lockfile

note "--ignore-sigterm --children 2: a process tree that only SIGKILL of the group stops"
pidB=$(start_trainer_on 1 bob --forever --ignore-sigterm --children 2)
expect_exit 0 wexec 1 -- ps -o pid=,pgid=,sid= --ppid "$pidB"
kids=$(echo "$OUT" | awk '{print $1}' | xargs)
[[ $(echo "$OUT" | wc -l) == 2 ]] || fail "expected 2 children: $OUT"
while read -r _ pg sid; do
  assert_eq "$pg $sid" "$pidB $pidB" "children share the parent's group and session"
done <<<"$OUT"
wexec 1 -- kill -TERM "$pidB"
sleep 0.5
expect_exit 0 wexec 1 -- kill -0 "$pidB"
wexec 1 -- kill -9 "$pidB"
sleep 0.3
holders=$(tpu_holders 1)
for k in $kids; do assert_contains "$holders" "$k bob /dev/accel0" "orphaned child $k holds the TPU"; done
assert_not_contains "$holders" "$pidB bob" "the parent is gone"
expect_exit 0 wexec 1 -- rm -f /tmp/libtpu_lockfile
expect_exit 1 wexec 1 --user alice -- python3 "$T" --steps 1
assert_contains "$ERR" "TPU initialization failed: open(/dev/accel0): Operation not permitted"
wexec 1 -- kill -9 -- "-$pidB"
sleep 0.3
assert_eq "$(tpu_holders 1)" "" "device holders after killing the group"
expect_exit 0 wexec 1 -- ps -e -o stat=,pid=,args=
assert_not_contains "$OUT" "Z " "zombies: init must reap orphans"
expect_exit 0 wexec 1 --user alice -- python3 "$T" --steps 1 --step-time 0.01
reset_tpus

# ------------------------------------------------------------ host faults
note "rekey: ssh with the old known_hosts fails with a changed-key error"
expect_exit 0 ssh_as alice 2 true
old_fp=$(ssh-keygen -lf "$FAKEPOD_STATE/w2/ssh_host_ed25519_key.pub" | awk '{print $2}')
rekey_worker 2 2>/dev/null
new_fp=$(ssh-keygen -lf "$FAKEPOD_STATE/w2/ssh_host_ed25519_key.pub" | awk '{print $2}')
[[ $old_fp != "$new_fp" ]] || fail "rekey kept the host key"
expect_exit 255 as_user alice ssh -i /home/alice/.ssh/id_ed25519 -o StrictHostKeyChecking=accept-new \
  -o UserKnownHostsFile="$ALICE_KH" -o BatchMode=yes -o ConnectTimeout=5 -o GSSAPIAuthentication=no \
  "alice@$(worker_ip 2)" true
assert_contains "$ERR" "REMOTE HOST IDENTIFICATION HAS CHANGED"
assert_contains "$ERR" "Host key verification failed"
as_user alice ssh-keygen -q -R "$(worker_ip 2)" -f "$ALICE_KH" >/dev/null 2>&1
expect_exit 0 ssh_as alice 2 'echo $TPU_WORKER_ID'
assert_eq "$OUT" 2

note "stop-worker: the port refuses, the worker's jobs die; start-worker restores it"
pidC=$(start_trainer_on 3 carol --forever)
assert_contains "$(tpu_holders 3)" "$pidC carol /dev/accel0"
stop_worker 3
expect_exit 0 "$FAKEPOD" status
assert_contains "$OUT" "w3 down $(worker_ip 3):22"
expect_exit 255 ssh_as alice 3 true
assert_contains "$ERR" "Connection refused"
expect_exit nonzero wexec 3 -- true
"$FAKEPOD" start-worker 3 >/dev/null
expect_exit 0 ssh_as alice 3 'echo $TPU_WORKER_ID; ls -A /tmp; ps -e -o args= | grep -c '[t]rain.py' || true'
assert_eq "$OUT" "3
0" "after a crash: same host key, empty /tmp, no trainer"

note "blackhole: TCP connects, ssh times out; start-worker restores"
blackhole_worker 4
expect_exit 0 "$FAKEPOD" status
assert_contains "$OUT" "w4 blackhole $(worker_ip 4):22"
expect_exit 0 timeout 5 bash -c "exec 3<>/dev/tcp/$(worker_ip 4)/22"
start=$SECONDS
expect_exit 255 as_user alice timeout 20 ssh -i /home/alice/.ssh/id_ed25519 -o ConnectTimeout=2 \
  -o UserKnownHostsFile="$ALICE_KH" -o BatchMode=yes -o GSSAPIAuthentication=no "alice@$(worker_ip 4)" true
assert_contains "$ERR" "timed out"
((SECONDS - start < 10)) || fail "ssh to the blackhole took $((SECONDS - start))s"
"$FAKEPOD" start-worker 4 >/dev/null
expect_exit 0 ssh_as alice 4 'echo $TPU_WORKER_ID'
assert_eq "$OUT" 4

# ------------------------------------------------------------ fixtures
note "tpurun.json and the gcloud describe fixture"
expect_exit 0 as_user carol /usr/bin/python3 -c '
import json, sys
c = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2]))
p = c["pods"][c["default_pod"]]
print(len(p["workers"]), p["workers"][-1], p["staging_root"], p["ssh"]["host_key_policy"])
print(len(d["networkEndpoints"]), d["networkEndpoints"][-1]["ipAddress"],
      d["networkEndpoints"][0]["accessConfig"]["externalIp"], d["state"], d["acceleratorType"])' \
  "$FAKEPOD_CONFIG" "$FAKEPOD_STATE/gcloud-describe.json"
assert_eq "$OUT" "$N $(worker_ip $((N - 1))) $FAKEPOD_NFS/staging accept-new
$N $(worker_ip $((N - 1))) $(worker_ip 0) READY v4-$((8 * N))"
expect_exit 0 as_user bob gcloud compute tpus tpu-vm describe sim-tpu --zone us-central2-b --format=json
assert_eq "$OUT" "$(cat "$FAKEPOD_STATE/gcloud-describe.json")"
expect_exit 1 as_user bob gcloud compute tpus tpu-vm describe nope --zone us-central2-b --format=json
assert_contains "$ERR" "NOT_FOUND"
expect_exit 0 as_user alice gcloud compute tpus tpu-vm ssh sim-tpu --zone us-central2-b --worker=1-2 --command='echo $TPU_WORKER_ID'
assert_eq "$(echo "$OUT" | sort | xargs)" "1 2"

# ------------------------------------------------------------ down / up
note "down leaves no process and no mount behind; vfio devices; up again"
for _ in $(seq 30); do
  before=$(pod_processes | wc -l)
  ((before == 4 * N)) && break
  sleep 0.1 # ssh sessions that just ended may still be exiting
done
((before == 4 * N)) || fail "expected $((4 * N)) pod processes (unshare, init, sshd, the /dev/log sink per worker), found $before:
$(pod_processes)"
"$FAKEPOD" down >/dev/null
left=$(pod_processes)
[[ -z $left ]] || fail "processes left after down: $left"
! grep -q "$FAKEPOD_STATE" /proc/self/mountinfo || fail "mounts left on the host"
expect_exit 0 "$FAKEPOD" status
assert_eq "$OUT" "pod down"
"$FAKEPOD" down >/dev/null # idempotent

FAKEPOD_DEVICE=vfio "$FAKEPOD" up 2 >/dev/null
expect_exit 0 ssh_as alice 1 'ls /dev/vfio; ls /dev/accel* 2>/dev/null | wc -l'
assert_eq "$OUT" "0
1
2
3
vfio
0"
pidV=$(start_trainer_on 1 alice --forever)
assert_contains "$(tpu_holders 1)" "$pidV alice /dev/vfio/0"
assert_contains "$(trainer_log 1 "$pidV")" "holds /dev/vfio/0 /dev/vfio/1 /dev/vfio/2 /dev/vfio/3 /dev/vfio/vfio"
assert_contains "$(cat "$FAKEPOD_STATE/gcloud-describe.json")" '"acceleratorType": "v5litepod-8"'
"$FAKEPOD" down >/dev/null
[[ -z $(pod_processes) ]] || fail "processes left after the vfio pod: $(pod_processes)"

"$FAKEPOD" up "$N" >/dev/null
after=$(pod_processes | wc -l)
assert_eq "$after" "$before" "pod processes after down+up"
expect_exit 0 "$FAKEPOD" up "$N"
assert_contains "$OUT" "already up"
expect_exit 0 ssh_as alice $((N - 1)) 'echo $TPU_WORKER_ID; ls /dev/accel0'
assert_eq "$OUT" "$((N - 1))
/dev/accel0" "host keys survive down/up"

pass
