#!/usr/bin/env bash
# The connection keeper (docs/keeper.md): a repeated command reuses kept
# sessions; a frozen or rebooted worker, a recreated VM's new key, another
# user, a keeper killed mid-command, wedged or of another version: each
# costs nothing but what it costs without the keeper. Each user gets a
# private XDG_RUNTIME_DIR per test, so this test's keepers are its own.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
N=$FAKEPOD_WORKERS

runtime_dir() {  # U: the user's XDG_RUNTIME_DIR for this test (0700, theirs)
  local d=$SCRATCH/$1/run
  [[ -d $d ]] || install -d -m 700 -o "$1" "$d"
  echo "$d"
}
# kt U ARGS...: tpurun as U with the keeper on.
kt() {
  local u=$1
  shift
  E2E_KEEP=${KEEP:-10m} AS_USER_ENV="XDG_RUNTIME_DIR=$(runtime_dir "$u") ${AS_USER_ENV:-}" tpurun_as "$u" "$@"
}
keeper_socket() {  # U: the socket agent status names
  kt "$1" agent status --json 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["socket"])'
}
keeper_dir() { dirname "$(keeper_socket "$1")"; }
keeper_pid() {  # U: the pid agent status reports, or nothing
  kt "$1" agent status --json 2>/dev/null | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("pid",""))' || true
}
keeper_up() { [[ -n $(keeper_pid "$1") ]]; }
kept_sessions() {  # U: how many sessions the keeper keeps
  kt "$1" agent status --json | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("sessions",[])))'
}
stop_keepers() {
  local u
  for u in alice bob; do kt "$u" agent stop >/dev/null 2>&1 || true; done
}
on_exit stop_keepers
# How many of the N workers a -v command reached on kept sessions.
kept_count() { grep -c "on a kept session" <<<"$1" || true; }
# said JSON TEXT: how many workers of an exec --json printed exactly TEXT.
said() {
  /usr/bin/python3 -c 'import json,sys; print(sum(w.get("stdout") == sys.argv[2] + "\n" for w in json.loads(sys.argv[1])["workers"]))' "$1" "$2"
}
# Runs exec until every worker answers on a kept session (a keeper just
# started, or one slow to say hello on a busy machine, sends a command direct).
warm() {  # U
  local u=$1
  warm_once() { kt "$u" -v exec -- true >/dev/null 2>"$SCRATCH/warm.err" && [[ $(kept_count "$(cat "$SCRATCH/warm.err")") == "$N" ]]; }
  wait_until "every worker on a kept session of $u's keeper" 60 warm_once
}

warm_exec() {
  local left
  # A keeper already serving this test's fresh runtime dir was started by a
  # process of an earlier run (seen once, with 0 sessions): say whose, end it.
  left=$(keeper_pid alice)
  if [[ -n $left ]]; then
    note "a keeper (pid $left) was already serving: $(ps -o pid=,lstart=,args= -p "$left" 2>&1); stopping it"
    stop_keepers
    wait_until "alice's leftover keeper gone" 10 eval '! keeper_up alice'
  fi
  expect_exit 1 kt alice agent status
  assert_contains "$OUT" "no keeper running"
  expect_exit 0 kt alice -v exec -- hostname
  assert_eq "$(kept_count "$ERR")" 0 "the first command had no keeper to use"
  wait_until "the keeper the first command started" 30 keeper_up alice
  warm alice
  expect_exit 0 kt alice -v exec --json -- echo warm
  assert_eq "$(kept_count "$ERR")" "$N"
  assert_eq "$(said "$OUT" warm)" "$N"
  expect_exit 0 kt alice agent status
  assert_contains "$OUT" "keeper pid"
  assert_contains "$OUT" "alice@$(worker_ip 0):22"
  assert_contains "$OUT" "unused"
  expect_exit 0 kt alice agent status --json
  /usr/bin/python3 - "$OUT" "$N" <<'PY'
import json, sys
d = json.loads(sys.argv[1]); n = int(sys.argv[2])
s = d["sessions"]
assert len(s) >= n, s
assert all(x["user"] == "alice" and x["age_s"] >= 0 and x["idle_s"] >= 0 and not x["in_use"] for x in s), s
PY
  expect_exit 0 kt alice agent stop --dry-run
  assert_contains "$OUT" "would stop keeper pid"
  keeper_up alice || fail "--dry-run stopped the keeper"
  expect_exit 0 kt alice agent stop
  assert_contains "$OUT" "stopped the keeper: closed"
  expect_exit 1 kt alice agent status
  expect_exit 0 kt alice exec -- true
}
e2e_case warm_exec "the first exec starts the keeper; the next ones run on kept sessions; agent status lists them, stop ends them"

commands_use_it() {
  local proj run
  expect_exit 0 kt alice agent start
  warm alice
  expect_exit 0 kt alice -v status
  assert_eq "$(kept_count "$ERR")" "$N" "status"
  expect_exit 0 kt alice -v runs
  proj=$(make_project alice proj)
  expect_exit 0 kt alice -C "$proj" -v stage -- /usr/bin/python3 -c 'print("staged through the keeper")'
  assert_contains "$OUT" "staged through the keeper"
  [[ $(kept_count "$ERR") -ge $N ]] || fail "stage's reservation did not use kept sessions: $ERR"
  run=$(sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' <<<"$ERR")
  expect_exit 0 kt alice -C "$proj" -v logs "$run"
  expect_exit 0 kt alice -v kill --dry-run
  # top: a stream to each worker's metrics port through the keeper (no
  # trainer: nothing listens, which top reports as idle chips).
  expect_exit 0 kt alice -v top
  [[ $(kept_count "$ERR") -ge $N ]] || fail "top did not use kept sessions: $ERR"
  # No kept session ever carried more channels at once than sshd allows (10).
  expect_exit 0 kt alice agent status --json
  local peak
  peak=$(json_get "$OUT" 'max(s["peak_channels"] for s in d["sessions"])')
  ((peak >= 1 && peak <= 10)) || fail "a session carried $peak channels at once"
  note "the most channels open at once on one kept session (stage, top, ...): $peak"
}
e2e_case commands_use_it "status, runs, stage (reservation and launch), logs, kill and top run on kept sessions"

frozen_worker() {
  nfs_mode && skip "a frozen worker is judged over ssh, on the plain pod"
  expect_exit 0 kt alice agent start
  warm alice
  freeze_worker 1
  expect_exit 255 kt alice exec --json -- echo alive
  /usr/bin/python3 - "$OUT" "$N" <<'PY'
import json, sys
d = json.loads(sys.argv[1]); n = int(sys.argv[2])
for w in d["workers"]:
    if w["worker"] == 1:
        assert w.get("error", {}).get("kind") == "timeout", w
        assert "connect timed out" in w["error"]["message"], w
    else:
        assert w["exit_code"] == 0 and w["stdout"] == "alive\n", w
PY
  note "frozen w1 took $(json_get "$OUT" '[w["duration_s"] for w in d["workers"] if w["worker"] == 1][0]') s (connect_timeout 5 s)"
  thaw_worker 1
  expect_exit 0 kt alice exec -- true
}
e2e_case frozen_worker "a frozen worker with a kept session: exec gives 255 for it as a connect timeout, the others answer"

rebooted_worker() {
  expect_exit 0 kt alice agent start
  warm alice
  stop_worker 2
  fakepod start-worker 2 >&2
  expect_exit 0 kt alice exec --json -- echo back
  assert_eq "$(said "$OUT" back)" "$N"
  assert_eq "$ERR" "" "no error shown"
}
e2e_case rebooted_worker "a worker whose sshd and sessions died (rebooted): the next command works, with no error shown"

new_host_key() {
  local direct kept
  expect_exit 0 kt alice agent start
  warm alice
  # w1's VM recreated: a new host key, and the old VM's sessions gone with it
  # (a rekey alone keeps open sessions, as sshd does; the reboot ends them).
  rekey_worker 1
  stop_worker 1
  fakepod start-worker 1 >&2
  refused() { /usr/bin/python3 -c 'import json,sys; print(" ".join(str(w["worker"]) for w in json.loads(sys.argv[1])["workers"] if (w.get("error") or {}).get("kind") == "hostkey" and "host key changed" in w["error"]["message"]))' "$1"; }
  expect_exit 255 kt alice exec --json -- true
  kept=$(refused "$OUT")
  expect_exit 255 tpurun_as alice exec --json -- true
  direct=$(refused "$OUT")
  assert_eq "$kept" "$direct" "workers refused for a changed key, with the keeper and without"
  assert_eq "$kept" "1"
}
e2e_case new_host_key "a recreated VM with new host keys: refused exactly as without the keeper"

# The keeper checks a kept session's host key again only when known_hosts (or
# ~/.ssh/config) changed since its last check; here it changes under open
# sessions, and the next command must see it.
known_hosts_edited() {
  local kh ip key
  expect_exit 0 kt alice agent start
  warm alice
  kh=$(user_home alice)/.ssh/known_hosts
  ip=$(worker_ip 2)
  cp -p "$kh" "$SCRATCH/known_hosts.kept"
  on_exit "cp -p '$SCRATCH/known_hosts.kept' '$kh'"
  key=$(awk -v ip="$(worker_ip 3)" '$1 == ip && $2 == "ssh-ed25519" { print $2, $3; exit }' "$kh")
  [[ -n $key ]] || fail "no ssh-ed25519 line of w3 in $kh"
  # w2's line now holds w3's key (written in place: same owner, same size).
  awk -v ip="$ip" -v key="$key" '$1 == ip { $0 = ip " " key } { print }' "$SCRATCH/known_hosts.kept" >"$kh"
  hostkey_refused() { /usr/bin/python3 -c 'import json,sys; print(" ".join(str(w["worker"]) for w in json.loads(sys.argv[1])["workers"] if (w.get("error") or {}).get("kind") == "hostkey"))' "$1"; }
  expect_exit 255 kt alice exec --json -- true
  assert_eq "$(hostkey_refused "$OUT")" "2" "workers refused once w2's known_hosts line changed under its kept session"
  # The line put back: every worker is accepted again.
  cp -p "$SCRATCH/known_hosts.kept" "$kh"
  expect_exit 0 kt alice exec -- true
}
e2e_case known_hosts_edited "known_hosts edited under kept sessions: the next exec checks them again and refuses the changed key"

other_user_refused() {
  local dir sock
  expect_exit 0 kt alice agent start
  sock=$(keeper_socket alice)
  dir=$(dirname "$sock")
  # The private dir keeps bob out...
  if as_user bob /usr/bin/python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$sock" 2>/dev/null; then
    fail "bob could connect through alice's 0700 dir"
  fi
  # ...and with the dir and socket opened by mistake, the keeper itself refuses him.
  chmod 755 "$dir"
  chmod 711 "$(dirname "$dir")"
  chmod 666 "$sock"
  on_exit "chmod 700 '$dir' '$(dirname "$dir")'"
  expect_exit 0 as_user bob /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(5)
data = s.recv(100)
sys.exit(0 if data == b"" else 1)' "$sock"
  grep -q "refused a connection from uid $(id -u bob) (bob)" "$dir/keeper.log" || fail "no refusal in alice's keeper log: $(cat "$dir/keeper.log")"
  # alice's own commands do not use a keeper in a dir others can enter.
  expect_exit 0 kt alice -v exec -- true
  assert_contains "$ERR" "has mode 0755"
  assert_eq "$(kept_count "$ERR")" 0
  chmod 700 "$dir" "$(dirname "$dir")"
  # bob's own keeper is his: its own dir, its own sessions.
  expect_exit 0 kt bob exec -- true
  wait_until "bob's own keeper" 30 keeper_up bob
  [[ $(keeper_pid bob) != "$(keeper_pid alice)" ]] || fail "bob got alice's keeper"
}
e2e_case other_user_refused "bob cannot use alice's keeper: her dir keeps him out, and her keeper refuses and logs him"

killed_mid_exec() {
  local pid i new
  expect_exit 0 kt alice agent start
  warm alice
  pid=$(keeper_pid alice)
  for i in $(seq 0 $((N - 1))); do fakepod exec "$i" -- rm -f /tmp/keeper-mid >&2; done
  kt alice exec --json -- sh -c 'touch /tmp/keeper-mid; sleep 30' >"$SCRATCH/mid.out" 2>"$SCRATCH/mid.err" &
  local bg=$!
  all_started() { for i in $(seq 0 $((N - 1))); do fakepod exec "$i" -- test -e /tmp/keeper-mid || return 1; done; }
  wait_until "the command started on every worker" 60 all_started
  kill -KILL "$pid"
  set +e
  wait "$bg"
  local rc=$?
  set -e
  assert_eq "$rc" 255
  /usr/bin/python3 - "$(cat "$SCRATCH/mid.out")" <<'PY'
import json, sys
for w in json.loads(sys.argv[1])["workers"]:
    assert w["error"]["kind"] == "channel" and "went away mid-command" in w["error"]["message"], w
PY
  for i in $(seq 0 $((N - 1))); do fakepod exec "$i" -- pkill -u alice -f 'sleep 30' >&2 || true; done
  expect_exit 0 kt alice exec --json -- echo after
  assert_eq "$(said "$OUT" after)" "$N"
  wait_until "a new keeper" 30 keeper_up alice
  new=$(keeper_pid alice)
  [[ $new != "$pid" ]] || fail "the killed keeper answers still"
}
e2e_case killed_mid_exec "the keeper killed mid-exec: that exec ends 255 per worker, said why; the next one works and starts a new keeper"

wedged_or_foreign() {
  local pid dir
  expect_exit 0 kt alice agent start
  warm alice
  pid=$(keeper_pid alice)
  kill -STOP "$pid"
  on_exit "kill -CONT $pid"
  expect_exit 0 kt alice -v exec --json -- echo direct
  assert_eq "$(said "$OUT" direct)" "$N"
  assert_contains "$ERR" "did not say hello"
  kill -CONT "$pid"
  local sock
  sock=$(keeper_socket alice)
  expect_exit 0 kt alice agent stop
  # Another tpurun's keeper at the socket: hello with another version.
  as_user alice /usr/bin/python3 -c '
# a foreign keeper
import json, os, socket, struct, sys
path = sys.argv[1]
if os.path.exists(path): os.unlink(path)
s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(64)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    head = json.dumps({"version": "tpurun 0.0.0-other", "pid": os.getpid()}).encode()
    c.sendall(bytes([1]) + struct.pack(">I", 4 + len(head)) + struct.pack(">I", len(head)) + head)
' "$sock" >"$SCRATCH/foreign.out" &
  on_exit "pkill -f 'a foreign keepe[r]'"
  wait_until "the foreign keeper" 30 grep -q ready "$SCRATCH/foreign.out"
  expect_exit 0 kt alice -v exec --json -- echo direct
  assert_eq "$(said "$OUT" direct)" "$N"
  assert_contains "$ERR" "another tpurun version"
}
e2e_case wedged_or_foreign "a wedged (SIGSTOP) keeper, and one of another version: exec goes direct and says why under -v"

two_terminals() {
  expect_exit 0 kt alice agent start
  warm alice
  terminal() {  # T: 20 execs, each must be whole and right
    local k
    for k in $(seq 1 20); do
      kt alice exec --json -- echo "t$1 $k" >"$SCRATCH/t$1.$k.out" 2>"$SCRATCH/t$1.$k.err" || { echo "t$1 exec $k failed" >&2; return 1; }
      [[ $(said "$(cat "$SCRATCH/t$1.$k.out")" "t$1 $k") == "$N" ]] || { echo "t$1 exec $k incomplete" >&2; return 1; }
    done
  }
  terminal 1 & local a=$!
  terminal 2 & local b=$!
  wait "$a" || fail "terminal 1: $(cat "$SCRATCH"/t1.*.err)"
  wait "$b" || fail "terminal 2: $(cat "$SCRATCH"/t2.*.err)"
  if grep -l "refused\|Session open" "$SCRATCH"/t[12].*.err; then fail "a session was refused"; fi
  local most
  most=$(kept_sessions alice)
  note "sessions kept after two terminals' 40 execs on $N workers: $most"
}
e2e_case two_terminals "two terminals run 20 execs each at once on one keeper: all right, no session refused"

idle_exit() {
  kt alice agent stop >/dev/null 2>&1 || true
  KEEP=3s expect_exit 0 kt alice agent start
  KEEP=3s kt alice exec -- true >/dev/null 2>&1
  gone() { ! keeper_up alice; }
  wait_until "the keeper's exit at its idle time" 60 gone
  grep -q "exiting: nothing kept or asked for" "$(runtime_dir alice)/tpurun/keeper.log" || fail "no idle exit in the log"
}
e2e_case idle_exit "with TPURUN_KEEP=3s the keeper closes its sessions and exits once idle"

e2e_run
