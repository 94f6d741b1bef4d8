#!/usr/bin/env bash
# Self-test of the pod simulator (scripts/fakepod, sim/fakepod), the fake
# trainer and gcloud against the simulated Cloud TPU API (the real gcloud when
# it is installed, else the stub), with plain OpenSSH only (no tpurun needed).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

N=$FAKEPOD_WORKERS
((N >= 6)) || skip "needs at least 6 workers (FAKEPOD_WORKERS=$N)"
T=$(trainer_path)
ALICE_KH=$(user_dir alice)/known_hosts
tag=fakepod-selftest-$$

# Processes that belong to the pod, seen from the host: the unshare parents,
# everything inside a worker PID namespace (of this pod), and the pod's
# daemons (API server, forwarder). One python3 pass over /proc (procs.py).
pod_processes() {
  "$E2E_DIR/procs.py" pod "$FAKEPOD_STATE"
}

# api_node ZONE NAME EXPR: a Python expression over the node n as the API returns it (or its error).
api_node() {
  /usr/bin/python3 - "$FAKEPOD_API" "$1" "$2" "$3" <<'PY'
import json, sys, urllib.error, urllib.request
try:
    n = json.load(urllib.request.urlopen(sys.argv[1] + "v2/projects/sim-proj/locations/%s/nodes/%s" % (sys.argv[2], sys.argv[3])))
except urllib.error.HTTPError as e:
    n = json.load(e)
print(eval(sys.argv[4]))
PY
}
# The zone of the VMs made through real gcloud, and the key their metadata
# names erin's (bob's key: it arrives before alice's).
zone=us-east1-d
bob_key() { awk '{print $1, $2}' /home/bob/.ssh/id_ed25519.pub; }

# ------------------------------------------------------------ reachability
ssh_identity() {
  local hosts i
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
}
e2e_case ssh_identity "every worker answers over ssh with its own TPU_WORKER_ID"

sudo_rights() {
  expect_exit 0 ssh_as alice 2 'sudo -n id -un'
  assert_eq "$OUT" root
  assert_not_contains "$ERR" "unable to resolve"
  expect_exit nonzero ssh_as carol 2 'sudo -n true'
}
e2e_case sudo_rights "sudo: alice yes (no 'unable to resolve host' noise), carol no"

exec_passthrough() {
  expect_exit 7 wexec 2 --user bob -- bash -c 'echo out; echo err >&2; echo "$USER $HOME $TPU_WORKER_ID $PWD"; exit 7'
  assert_eq "$OUT" "out
bob /home/bob 2 /home/bob"
  assert_eq "$ERR" "err"
}
e2e_case exec_passthrough "fakepod exec passes stdout, stderr and exit codes through"

# ------------------------------------------------------------ per-worker state
private_tmp() {
  on_exit "wexec 0 -- rm -f /tmp/$tag"
  expect_exit 0 ssh_as alice 0 "echo w0 >/tmp/$tag && cat /tmp/$tag"
  assert_eq "$OUT" w0
  expect_exit 0 ssh_as alice 1 "test ! -e /tmp/$tag && stat -c %a /tmp"
  assert_eq "$OUT" 1777
  [[ ! -e /tmp/$tag ]] || fail "/tmp/$tag leaked to the host"
  wexec 0 -- rm -f "/tmp/$tag"
}
e2e_case private_tmp "/tmp is private per worker"

tpu_devices() {
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
}
e2e_case tpu_devices "TPU device files exist, mode 0666, and nothing leaks into the host's /dev"

shared_nfs_dir() {
  # (the test reads the share as the NFS server has it: srv)
  local file
  file=$(srv "$FAKEPOD_NFS/staging/$tag")
  on_exit "rm -f '$file'"
  mkdir -p "$(srv "$FAKEPOD_NFS/staging")"
  expect_exit 0 ssh_as alice 3 "echo shared-$$ >$FAKEPOD_NFS/staging/$tag"
  assert_eq "$(cat "$file")" "shared-$$"
  expect_exit 0 ssh_as bob 5 "cat $FAKEPOD_NFS/staging/$tag; stat -c %a $FAKEPOD_NFS/staging $FAKEPOD_NFS/logs"
  assert_eq "$OUT" "shared-$$
1777
1777"
  rm -f "$file"
}
e2e_case shared_nfs_dir "the NFS dir is shared"

# The trainer cases each start from a free TPU everywhere, and leave one.
pid_namespace() {
  local pidA first nprocs
  on_exit reset_tpus
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
}
e2e_case pid_namespace "the PID namespace shows only the worker's own processes"

# ------------------------------------------------------------ trainer semantics
trainer_lockfile() {
  local pidA holders
  on_exit reset_tpus
  pidA=$(start_trainer_on 1 alice --forever)
  # alice's trainer holds the lockfile and the devices
  expect_exit 0 wexec 1 -- stat -c '%U %a' /tmp/libtpu_lockfile
  assert_eq "$OUT" "alice 600"
  expect_exit 0 wexec 1 -- cat /tmp/libtpu_lockfile
  assert_eq "$OUT" "$pidA"
  holders=$(tpu_holders 1)
  assert_contains "$holders" "$pidA alice /dev/accel0"
  assert_contains "$holders" "$pidA alice /dev/accel3"
  # bob is blocked by alice's 0600 lockfile
  expect_exit 1 wexec 1 --user bob -- python3 "$T" --steps 1
  assert_contains "$ERR" 'The TPU is already in use by another process probably owned by another user. Run "$ sudo lsof -w /dev/accel0" to figure out which process is using the TPU. If you still get this message, run "$ sudo rm /tmp/libtpu_lockfile".'
  # a second alice trainer names the holder's pid
  expect_exit 1 wexec 1 --user alice -- python3 "$T" --steps 1
  assert_contains "$ERR" "The TPU is already in use by process with pid $pidA. Not attempting to load libtpu.so in this process."
}
e2e_case trainer_lockfile "alice's trainer holds the 0600 lockfile and the devices; bob is blocked, a second alice trainer is told the holder's pid"

stale_lockfile() {
  local pidA
  on_exit reset_tpus
  pidA=$(start_trainer_on 1 alice --forever)
  # SIGKILL leaves a stale lockfile but frees the devices
  wexec 1 -- kill -9 "$pidA"
  wait_until "alice's SIGKILLed trainer to be gone (reaped)" 120 wexec 1 -- sh -c "! kill -0 $pidA 2>/dev/null"
  expect_exit 0 wexec 1 -- stat -c '%U' /tmp/libtpu_lockfile
  assert_eq "$OUT" alice "stale lockfile"
  assert_eq "$(tpu_holders 1)" "" "device holders after SIGKILL"
  expect_exit 0 wexec 1 -- ps -e -o stat=
  assert_not_contains "$OUT" Z "zombie after SIGKILL (reaping)"
  expect_exit 1 wexec 1 --user bob -- python3 "$T" --steps 1
  assert_contains "$ERR" "probably owned by another user" "stale lockfile blocks bob"
  # the stale lockfile does not block its owner; a normal exit removes it
  expect_exit 0 wexec 1 --user alice -- python3 "$T" --steps 2 --step-time 0.05
  assert_contains "$OUT" "worker 1 step 2 loss"
  assert_contains "$OUT" "holds /dev/accel0 /dev/accel1 /dev/accel2 /dev/accel3"
  expect_exit 1 wexec 1 -- test -e /tmp/libtpu_lockfile
}
e2e_case stale_lockfile "SIGKILL leaves a stale lockfile (bob is blocked, the devices are free); its owner is not blocked, and a normal exit removes it"

tpu_logs_noise() {
  on_exit reset_tpus
  # alice's run leaves her /tmp/tpu_logs behind, as libtpu does
  expect_exit 0 wexec 1 --user alice -- python3 "$T" --steps 1 --step-time 0.05
  expect_exit 3 wexec 1 --user bob -- python3 "$T" --steps 1 --step-time 0.05 --exit-code 3
  assert_contains "$ERR" "Could not open the log file '/tmp/tpu_logs/"
  assert_contains "$ERR" "Permission denied"
  assert_contains "$OUT" "worker 1 step 1 loss"
}
e2e_case tpu_logs_noise "another user's /tmp/tpu_logs is only noise; --exit-code"

sigterm_shutdown() {
  on_exit reset_tpus
  # TERM once the trainer is training (its handler is in place: a TERM sent
  # by a clock, before python3 has even started, tests nothing), and twice,
  # as GNU timeout does (the child, then its group): one clean shutdown.
  # shellcheck disable=SC2016
  expect_exit 143 wexec 1 --user bob -- bash -c '
    python3 "$0" --forever --step-time 0.1 >/tmp/sigterm.out 2>&1 & p=$!
    for _ in $(seq 600); do grep -q " step 1 " /tmp/sigterm.out && break; sleep 0.1; done
    kill -TERM "$p"; kill -TERM "$p"; rc=0; wait "$p" || rc=$?
    cat /tmp/sigterm.out; exit "$rc"' "$T"
  assert_contains "$OUT" "got SIGTERM"
  expect_exit 1 wexec 1 -- test -e /tmp/libtpu_lockfile
}
e2e_case sigterm_shutdown "SIGTERM: clean shutdown, exit 143, lockfile removed"

group_kill_only() {
  local pidB kids pg sid k holders
  on_exit reset_tpus
  pidB=$(start_trainer_on 1 bob --forever --ignore-sigterm --children 2)
  expect_exit 0 wexec 1 -- ps -o pid=,pgid=,sid= --ppid "$pidB"
  kids=$(echo "$OUT" | awk '{print $1}' | xargs)
  [[ $(echo "$OUT" | wc -l) == 2 ]] || fail "expected 2 children: $OUT"
  while read -r _ pg sid; do
    assert_eq "$pg $sid" "$pidB $pidB" "children share the parent's group and session"
  done <<<"$OUT"
  # The parent ignores SIGTERM (SIG_IGN, set before it took the lock): the
  # kernel discards the signal as it is sent, so the parent is alive after it
  # with nothing to wait for.
  expect_exit 0 wexec 1 -- awk '/^SigIgn:/ {print $2}' "/proc/$pidB/status"
  ((16#$OUT & (1 << 14))) || fail "bob's trainer does not ignore SIGTERM (SigIgn $OUT)"
  wexec 1 -- kill -TERM "$pidB"
  expect_exit 0 wexec 1 -- kill -0 "$pidB"
  wexec 1 -- kill -9 "$pidB"
  parent_holds() { tpu_holders 1 | grep -q "^$pidB bob "; }
  wait_until "bob's SIGKILLed trainer to let go of its devices" 120 eval '! parent_holds'
  holders=$(tpu_holders 1)
  for k in $kids; do assert_contains "$holders" "$k bob /dev/accel0" "orphaned child $k holds the TPU"; done
  assert_not_contains "$holders" "$pidB bob" "the parent is gone"
  expect_exit 0 wexec 1 -- rm -f /tmp/libtpu_lockfile
  expect_exit 1 wexec 1 --user alice -- python3 "$T" --steps 1
  assert_contains "$ERR" "TPU initialization failed: open(/dev/accel0): Operation not permitted"
  wexec 1 -- kill -9 -- "-$pidB"
  wait_until "no device holder on w1 after killing the group" 120 eval '[[ -z $(tpu_holders 1) ]]'
  # zombies: init must reap orphans
  wait_until "w1's init to reap the killed group (no zombie left)" 120 \
    eval '[[ $(wexec 1 -- ps -e -o stat=,pid=,args=) != *"Z "* ]]'
  expect_exit 0 wexec 1 --user alice -- python3 "$T" --steps 1 --step-time 0.01
  reset_tpus
}
e2e_case group_kill_only "--ignore-sigterm --children 2: a process tree that only SIGKILL of the group stops"

# ------------------------------------------------------------ host faults
rekey() {
  local old_fp new_fp
  expect_exit 0 ssh_as alice 2 true
  old_fp=$(ssh-keygen -lf "$FAKEPOD_STATE/w2/ssh_host_ed25519_key.pub" | awk '{print $2}')
  rekey_worker 2 2>/dev/null
  # (should a check fail before the key is forgotten below: the cases after this one use $ALICE_KH too)
  on_exit "as_user alice ssh-keygen -q -R '$(worker_ip 2)' -f '$ALICE_KH'"
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
}
e2e_case rekey "rekey: ssh with the old known_hosts fails with a changed-key error"

stopped_worker() {
  local pidC
  on_exit reset_tpus
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
}
e2e_case stopped_worker "stop-worker: the port refuses, the worker's jobs die; start-worker restores it"

blackholed_worker() {
  blackhole_worker 4
  expect_exit 0 "$FAKEPOD" status
  assert_contains "$OUT" "w4 blackhole $(worker_ip 4):22"
  expect_exit 0 timeout 5 bash -c "exec 3<>/dev/tcp/$(worker_ip 4)/22"
  # ssh gives up by its own ConnectTimeout (exit 255, "timed out"); were it to
  # hang on the open TCP connection, timeout would end it with 124 instead.
  expect_exit 255 as_user alice timeout 60 ssh -i /home/alice/.ssh/id_ed25519 -o ConnectTimeout=2 \
    -o UserKnownHostsFile="$ALICE_KH" -o BatchMode=yes -o GSSAPIAuthentication=no "alice@$(worker_ip 4)" true
  assert_contains "$ERR" "timed out"
  "$FAKEPOD" start-worker 4 >/dev/null
  expect_exit 0 ssh_as alice 4 'echo $TPU_WORKER_ID'
  assert_eq "$OUT" 4
}
e2e_case blackholed_worker "blackhole: TCP connects, ssh times out; start-worker restores"

# ------------------------------------------------------------ fixtures
fixtures() {
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
  /usr/bin/python3 - "$OUT" "$FAKEPOD_STATE/gcloud-describe.json" <<'PY' || fail "describe differs from the fixture"
import json, sys
a, b = json.loads(sys.argv[1]), json.load(open(sys.argv[2]))
a.pop("metadata", None); b.pop("metadata", None)
assert a == b, (a, b)
PY
  expect_exit 1 as_user bob gcloud compute tpus tpu-vm describe nope --zone us-central2-b --format=json
  assert_contains "$ERR" "NOT_FOUND: Resource 'projects/sim-proj/locations/us-central2-b/nodes/nope' was not found"
  expect_exit 0 as_user alice gcloud compute tpus tpu-vm ssh sim-tpu --zone us-central2-b --worker=1-2 --command='echo $TPU_WORKER_ID'
  # (gcloud's first ssh also prints ssh-keygen's output: it makes ~/.ssh/google_compute_engine)
  assert_eq "$(grep -xE '[0-9]+' <<<"$OUT" | sort | xargs)" "1 2"
}
e2e_case fixtures "tpurun.json and the gcloud describe fixture ($E2E_GCLOUD gcloud)"

# ------------------------------------------------------------ the guest agent
agent_users() {
  local u
  for u in alice bob carol; do
    expect_exit 0 wexec 3 -- id -u "$u"
    assert_eq "$OUT" "$(id -u "$u")" "$u's uid on worker 3"
  done
  expect_exit 0 wexec 3 -- sh -c 'getent group google-sudoers | cut -d: -f4; ls /home; test -f /etc/sudoers.d/google_sudoers && echo sudoers'
  assert_contains "$OUT" "alice,bob,carol"
  assert_contains "$OUT" "sudoers"
  assert_not_contains "$(wexec 3 -- ls /etc/sudoers.d)" "tpurun-fakepod"
  expect_exit 0 wexec 3 -- sh -c 'grep -c "^# Added by Google" /home/alice/.ssh/authorized_keys'
  expect_exit 1 wexec 3 -- test -e /home/alice/.ssh/id_ed25519
}
e2e_case agent_users "the agent made the users from metadata ssh-keys: the dev VM's uids, google-sudoers, a per-VM /etc and /home"

keyless_user() {
  useradd -M -s /bin/bash nokey-$$ 2>/dev/null || true
  on_exit "userdel nokey-$$"
  expect_exit nonzero wexec 3 -- id nokey-$$
}
e2e_case keyless_user "a user whose key is not in metadata is refused, as on a fresh VM"

host_key_attribute() {
  # (the script on stdin: as_user's commands read $AS_USER_STDIN, /dev/null unless told)
  AS_USER_STDIN=/dev/stdin expect_exit 0 as_user bob /usr/bin/python3 - "$FAKEPOD_API" \
    "$(awk '{print $2}' "$FAKEPOD_STATE/w3/ssh_host_ed25519_key.pub")" <<'PY'
import json, sys, urllib.request
r = urllib.request.Request(sys.argv[1] + "v2/projects/sim-proj/locations/us-central2-b/nodes/sim-tpu:getGuestAttributes",
                           data=json.dumps({"workerIds": ["3"]}).encode(), method="POST")
items = json.load(urllib.request.urlopen(r))["guestAttributes"][0]["queryValue"]["items"]
assert {"namespace": "hostkeys", "key": "ssh-ed25519", "value": sys.argv[2]} in items, items
print("checked")
PY
  assert_eq "$OUT" "checked" "the guest attributes' check ran"
}
e2e_case host_key_attribute "the host key is a guest attribute (what gcloud builds its HostKeyAlias from)"

private_localhost() {
  local w
  listening() {  # I: something answers on worker I's 127.0.0.1:8431
    wexec "$1" -- python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8431), 2)' 2>/dev/null
  }
  on_exit "wexec 1 -- pkill -f 8431; wexec 2 -- pkill -f 8431"
  # The same port on w1 and on w2: each worker's localhost is its own.
  for w in 1 2; do
    wexec "$w" -- sh -c 'exec setsid python3 -c "import socket,time; s=socket.socket(); s.bind((\"127.0.0.1\", 8431)); s.listen(); time.sleep(30)" </dev/null >/dev/null 2>&1 &'
  done
  wait_until "the listeners on w1 and w2" 120 eval 'listening 1 && listening 2'
  expect_exit 0 wexec 1 -- python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8431), 2)'
  expect_exit 1 wexec 3 -- python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8431), 2)'
  expect_exit 1 wexec 3 -- python3 -c "import socket; socket.create_connection((\"$(worker_ip 1)\", 22), 2)"
  wexec 1 -- pkill -f 8431 || true
  wexec 2 -- pkill -f 8431 || true
}
e2e_case private_localhost "each worker's localhost is its own; another worker's address is unreachable from a worker"

partition_heal() {
  fakepod partition 4 >/dev/null
  on_exit "\"\$FAKEPOD\" heal 4"
  expect_exit 255 as_user alice ssh -i /home/alice/.ssh/id_ed25519 -o ConnectTimeout=2 -o BatchMode=yes \
    -o UserKnownHostsFile="$ALICE_KH" -o StrictHostKeyChecking=accept-new "alice@$(worker_ip 4)" true
  assert_contains "$ERR" "timed out"
  fakepod heal 4 >/dev/null
  expect_exit 0 ssh_as alice 4 'echo $TPU_WORKER_ID'
}
e2e_case partition_heal "partition: new connections time out, heal restores"

# ------------------------------------------------------------ the cloud
preempt_and_up() {
  fakepod preempt sim-tpu >/dev/null
  expect_exit 0 as_user bob gcloud compute tpus tpu-vm describe sim-tpu --zone us-central2-b --format=json
  assert_eq "$(json_get "$OUT" 'd["state"] + " " + str(d.get("health"))')" "PREEMPTED None"
  expect_exit 255 ssh_as alice 0 true
  expect_exit 1 as_user alice gcloud compute tpus tpu-vm ssh sim-tpu --zone us-central2-b --worker=0 --command=true
  assert_contains "$ERR" 'This TPU has terminal state "PREEMPTED", so it cannot be used anymore.'
  "$FAKEPOD" up "$N" >/dev/null
  expect_exit 0 ssh_as alice 0 'echo $TPU_WORKER_ID'
}
e2e_case preempt_and_up "preempt: the state says PREEMPTED and the workers are gone; up restores the pod"

# The VMs made through real gcloud: newvm (on workers N and N+1) from one case
# to the next, until new_vm_stop_start deletes it.
new_tpu_vm() {
  local old_key ips
  [[ $E2E_GCLOUD == real ]] || skip "needs the real gcloud"
  printf 'erin:%s erin\n' "$(bob_key)" >"$SCRATCH/keys"
  chmod 644 "$SCRATCH/keys"
  old_key=$(cat "$FAKEPOD_STATE/w$N/ssh_host_ed25519_key.pub" 2>/dev/null || true)
  expect_exit 0 as_user bob gcloud compute tpus tpu-vm create newvm --zone $zone --accelerator-type v4-16 \
    --version tpu-ubuntu2204-base --metadata-from-file ssh-keys="$SCRATCH/keys"
  expect_exit 0 as_user bob gcloud compute tpus tpu-vm describe newvm --zone $zone --format=json
  ips=$(/usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["state"] == "READY", d; print(" ".join(e["ipAddress"] for e in d["networkEndpoints"]))' "$OUT")
  assert_eq "$ips" "$(worker_ip "$N") $(worker_ip $((N + 1)))" "a new VM on free addresses"
  [[ $(cat "$FAKEPOD_STATE/w$N/ssh_host_ed25519_key.pub") != "$old_key" ]] || fail "the new VM kept an old host key"
  # erin's key came first (instance keys before project keys): she took the
  # first uid, so alice's differs from the dev VM's.
  expect_exit 0 wexec "$N" -- id -u alice
  [[ $OUT != "$(id -u alice)" ]] || fail "alice has the dev VM's uid on a VM where erin arrived first"
}
e2e_case new_tpu_vm "a new TPU VM through real gcloud: CREATING then READY, new workers, new host keys; uids follow arrival order"

new_vm_mount() {
  expect_exit 1 wexec "$N" -- test -e "$FAKEPOD_NFS/staging"
  expect_exit 0 wexec "$N" -- sh -c "echo 'fakenfs:/ $FAKEPOD_NFS fakenfs defaults 0 0' >>/etc/fstab && mount $FAKEPOD_NFS && stat -c %a $FAKEPOD_NFS/staging"
  assert_eq "$OUT" "1777"
}
e2e_case new_vm_mount "a new VM has no shared mount until its setup mounts it (mount -t fakenfs, as root)" --needs new_tpu_vm

new_vm_stop_start() {
  local key_before slot new0
  key_before=$(cat "$FAKEPOD_STATE/w$N/ssh_host_ed25519_key.pub")
  fakepod stop newvm --zone $zone >/dev/null
  assert_eq "$(api_node $zone newvm 'n["state"]')" "STOPPED"
  expect_exit 255 ssh_as alice "$N" true
  fakepod start newvm --zone $zone --new-ips >/dev/null
  assert_eq "$(api_node $zone newvm 'n["state"]')" "READY"
  slot=$(json_file "$FAKEPOD_STATE/cloud.json" '[n["slots"][0] for n in d["nodes"].values() if n["name"] == "newvm"][0]')
  expect_exit 0 wexec "$slot" -- stat -c %a "$FAKEPOD_NFS/staging"  # fstab: mounted at boot
  assert_eq "$OUT" "1777"
  assert_eq "$(cat "$FAKEPOD_STATE/w$slot/ssh_host_ed25519_key.pub")" "$key_before" "start keeps the host key"
  new0=$(api_node $zone newvm 'n["networkEndpoints"][0]["ipAddress"]')
  [[ $new0 != "$(worker_ip "$N")" ]] || fail "start --new-ips kept the address"
  expect_exit 0 as_user bob gcloud compute tpus tpu-vm delete newvm --zone $zone --quiet
  assert_eq "$(api_node $zone newvm 'n["error"]["status"]')" "NOT_FOUND"
}
e2e_case new_vm_stop_start "stop / start --new-ips: the same disks and host keys on new addresses" --needs new_vm_mount

os_login() {
  local osl osl_ip
  [[ $E2E_GCLOUD == real ]] || skip "needs the real gcloud"
  fakepod create osl --zone $zone --accelerator v4-8 --metadata enable-oslogin=TRUE --metadata "ssh-keys=erin:$(bob_key) erin" >/dev/null
  osl=$(json_file "$FAKEPOD_STATE/cloud.json" '[n["slots"][0] for n in d["nodes"].values() if n["name"] == "osl"][0]')
  expect_exit 0 wexec "$osl" -- id -u alice
  assert_eq "$OUT" "$(id -u alice)"
  expect_exit 1 wexec "$osl" -- id erin
  expect_exit 0 as_user alice gcloud compute tpus tpu-vm ssh osl --zone $zone --command='id -un; sudo -n true && echo sudo'
  assert_eq "$(tail -n 2 <<<"$OUT")" "alice
sudo"
  # carol's OS Login profile has her key; her account lacks the admin role.
  osl_ip=$(api_node $zone osl 'n["networkEndpoints"][0]["ipAddress"]')
  expect_exit 0 as_user carol ssh -i /home/carol/.ssh/id_ed25519 -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "carol@$osl_ip" 'id -un; sudo -n true || echo nosudo'
  assert_eq "$OUT" "carol
nosudo"
  "$FAKEPOD" up "$N" >/dev/null
  local u
  for u in alice bob carol; do
    rm -f "$(user_home $u)"/.ssh/google_compute_{engine,engine.pub,known_hosts}
  done
}
e2e_case os_login "OS Login: one uid per user everywhere, from the account's POSIX account"

# ------------------------------------------------------------ down / up
down_and_up() {
  local want=$((4 * N + 2)) left before after pidV
  # (the default pod alone, whatever VMs the cases before left)
  "$FAKEPOD" up "$N" >/dev/null
  pod_count() {  # the pod's processes now; the list in $SCRATCH/pod_processes
    pod_processes >"$SCRATCH/pod_processes"
    [[ $(wc -l <"$SCRATCH/pod_processes") == "$want" ]]
  }
  # (ssh sessions that just ended may still be exiting)
  wait_until "$want pod processes (unshare, init, sshd, the agent per worker; server and forwarder): last seen in $SCRATCH/pod_processes" \
    30 pod_count
  before=$want
  "$FAKEPOD" down >/dev/null
  left=$(pod_processes)
  [[ -z $left ]] || fail "processes left after down: $left"
  # (a namespace's last process may still be exiting)
  wait_until "no mount of the pod left on the host (grep ' $FAKEPOD_STATE/' /proc/self/mountinfo)" 120 \
    eval '! grep -qF " $FAKEPOD_STATE/" /proc/self/mountinfo'
  expect_exit 0 "$FAKEPOD" status
  assert_eq "$OUT" "pod down"
  "$FAKEPOD" down >/dev/null # idempotent

  FAKEPOD_DEVICE=vfio "$FAKEPOD" up 2 >/dev/null
  # A worker that boots again gets its first host key back (a test before
  # this one in the lane may have rekeyed it: test_keeper rekeys w1), and
  # `up` forgets the old key in the users' homes; forget it in this test's
  # own known_hosts too.
  for i in 0 1; do as_user alice ssh-keygen -q -R "$(worker_ip "$i")" -f "$ALICE_KH" >/dev/null 2>&1 || true; done
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
}
e2e_case down_and_up "down leaves no process and no mount behind; vfio devices; up again"

e2e_run
