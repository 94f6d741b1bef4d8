#!/usr/bin/env bash
# board.gcloud: status --all also lists the TPU VMs that `gcloud compute tpus
# tpu-vm list` finds in each zone (one call per zone): READY ones are scanned,
# others show gcloud's state, ones the config already has are not repeated; a
# failing gcloud is an error line that holds back nothing; config mistakes are
# reported at file:line.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/board_lib.sh"
require_tpurun

ssh_json='{ "identity_file": "~/.ssh/id_ed25519", "known_hosts": "~/.ssh/known_hosts", "host_key_policy": "accept-new", "connect_timeout_s": 5 }'
cfg=$SCRATCH/board.json
cat >"$cfg" <<JSON
{ "pods": {
    $(carved_pod board-a 0 1) },
  "board": { "gcloud": { "project": "sim-proj", "zones": ["us-central2-b", "europe-west4-a"],
                         "ssh": $ssh_json } } }
JSON
# What gcloud lists in us-central2-b: team-v4 on workers 2-3, a preempted
# old-v4, and board-a, which the config has already.
list=$SCRATCH/list.json
node() {  # NAME STATE TYPE FIRST LAST
  local eps="" i
  for ((i = $4; i <= $5; i++)); do eps+="${eps:+, }{\"ipAddress\": \"$(worker_ip "$i")\", \"port\": 8470}"; done
  printf '{"name": "projects/sim-proj/locations/us-central2-b/nodes/%s", "id": "77%s", "state": "%s", "acceleratorType": "%s", "networkEndpoints": [%s]}' \
    "$1" "$4" "$2" "$3" "$eps"
}
cat >"$list" <<JSON
[ $(node team-v4 READY v4-16 2 3),
  $(node old-v4 PREEMPTED v4-8 1 0),
  $(node board-a READY v4-8 0 1) ]
JSON
log=$SCRATCH/gcloud.log
: >"$log"
chmod 644 "$cfg" "$list"
chmod 666 "$log"
chmod 755 "$SCRATCH"
export AS_USER_ENV="GCLOUD_STUB_LIST=$list GCLOUD_STUB_LOG=$log"

start_trainer_on 3 bob --forever >/dev/null
expect_exit 0 b alice status --all --json
python3 - "$OUT" <<'PY' || fail "status --all --json: $OUT"
import json, sys
pods = json.loads(sys.argv[1])["pods"]
assert [p["pod"] for p in pods] == ["board-a", "team-v4", "old-v4"], [p["pod"] for p in pods]
by = {p["pod"]: p for p in pods}
assert by["board-a"]["state"] == "free" and by["board-a"]["accelerator_type"] is None, by["board-a"]
t = by["team-v4"]
assert (t["state"], t["accelerator_type"], t["gcloud_state"]) == ("partial", "v4-16", "READY"), t
assert [w["state"] for w in t["workers"]] == ["free", "busy-other"], t["workers"]
assert [h["user"] for h in t["holders"]] == ["bob"] and t["claim"] is None, t
o = by["old-v4"]
assert (o["state"], o["gcloud_state"], o["workers"]) == ("unreachable", "PREEMPTED", []), o
PY
# One list per zone, nothing else asked of gcloud.
assert_eq "$(grep -c 'tpu-vm list --project sim-proj --zone us-central2-b --format=json' "$log")" "1"
assert_eq "$(grep -c 'tpu-vm list --project sim-proj --zone europe-west4-a --format=json' "$log")" "1"
assert_eq "$(wc -l <"$log")" "2" "gcloud calls: $(cat "$log")"

expect_exit 0 b alice status --all
assert_contains "$OUT" "team-v4 (v4-16)  partial      bob: python3 train.py"
assert_contains "$OUT" "old-v4 (v4-8)    unreachable  gcloud: PREEMPTED"
assert_eq "$(grep -c '^board-a ' <<<"$OUT")" "1" "board-a once: $OUT"

# gcloud failing: an error line per zone and for the config's gcloud pod
# (asked once), the other pods as usual.
cfg=$SCRATCH/board2.json
cat >"$cfg" <<JSON
{ "pods": {
    $(carved_pod board-a 0 1),
    "g": { "gcloud": { "name": "sim-tpu", "zone": "us-central2-b" }, "ssh": $ssh_json,
           "staging_root": "$FAKEPOD_NFS/staging", "logs_root": "$FAKEPOD_NFS/logs" } },
  "board": { "gcloud": { "project": "sim-proj", "zones": ["us-central2-b", "europe-west4-a"] } } }
JSON
chmod 644 "$cfg"
: >"$log"
AS_USER_ENV="GCLOUD_STUB_FAIL=quota-exceeded GCLOUD_STUB_LOG=$log" expect_exit 1 b alice status --all
assert_contains "$OUT" "gcloud:us-central2-b"
assert_contains "$OUT" "error        \`gcloud compute tpus tpu-vm list --zone us-central2-b\` failed: ERROR: (gcloud.compute.tpus.tpu-vm.list) quota-exceeded"
grep -q '^g  *error .*quota-exceeded' <<<"$OUT" || fail "pod g: $OUT"
grep -q '^board-a  *free' <<<"$OUT" || fail "board-a not free: $OUT"
assert_eq "$(grep -c 'tpu-vm describe sim-tpu' "$log")" "1" "describe once: $(cat "$log")"
assert_eq "$(grep -c 'tpu-vm list' "$log")" "2" "a list per zone: $(cat "$log")"

# Config mistakes, at file:line.
bad=$SCRATCH/bad.json
printf '{ "pods": { %s },\n  "board": { "gcloud": { "project": "sim-proj",\n    "zones": [] } } }\n' "$(carved_pod board-a 0 1)" >"$bad"
chmod 644 "$bad"
expect_exit 2 as_user alice "$TPURUN" --config "$bad" status --all
assert_contains "$ERR" "$bad:3: board.gcloud.zones: list at least one zone"
printf '{ "pods": { %s },\n  "board": { "gcloud": { "project": "sim-proj",\n    "zone": ["us-central2-b"] } } }\n' "$(carved_pod board-a 0 1)" >"$bad"
expect_exit 2 as_user alice "$TPURUN" --config "$bad" status --all
assert_contains "$ERR" "$bad:3: board.gcloud"
assert_contains "$ERR" "did you mean 'zones'"
pass
