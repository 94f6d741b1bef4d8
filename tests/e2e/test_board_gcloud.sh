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
# The listed TPU VMs live in their own zone (the default node sim-tpu is in
# us-central2-b): team-v4 on workers 2-3, a preempted old-v4, and board-a,
# which the config has already. They are listing-only nodes over the
# simulator's running workers (fakepod node-add); gcloud (real or stub) lists
# them from the simulated API.
Z=us-east5-a
list_cfg=$SCRATCH/board.json
cat >"$list_cfg" <<JSON
{ "pods": {
    $(carved_pod board-a 0 1) },
  "board": { "gcloud": { "project": "sim-proj", "zones": ["$Z", "europe-west4-a"],
                         "ssh": $ssh_json } } }
JSON
# gcloud failing: the config's gcloud pod g beside board-a, the board in two zones.
fail_cfg=$SCRATCH/board2.json
cat >"$fail_cfg" <<JSON
{ "pods": {
    $(carved_pod board-a 0 1),
    "g": { "gcloud": { "name": "sim-tpu", "zone": "us-central2-b" }, "ssh": $ssh_json,
           "staging_root": "$FAKEPOD_NFS/staging", "logs_root": "$FAKEPOD_NFS/logs" } },
  "board": { "gcloud": { "project": "sim-proj", "zones": ["us-central2-b", "europe-west4-a"] } } }
JSON
chmod 644 "$list_cfg" "$fail_cfg"
chmod 755 "$SCRATCH"
on_exit "\"\$FAKEPOD\" up $FAKEPOD_WORKERS"
# What gcloud asked the API: the requests the simulator logs since $api_from.
api_calls() { tail -n "+$((api_from + 1))" "$FAKEPOD_STATE/api.log" | grep ' api ' || true; }

gcloud_listing() {
  local cfg=$list_cfg api_from
  on_exit reset_tpus
  fakepod node-add team-v4 --zone $Z --slots 2-3 --accelerator v4-16 --id 772 >/dev/null
  fakepod node-add old-v4 --zone $Z --state PREEMPTED --accelerator v4-8 --id 771 >/dev/null
  fakepod node-add board-a --zone $Z --slots 0-1 --accelerator v4-8 --id 770 >/dev/null
  api_from=$(wc -l <"$FAKEPOD_STATE/api.log")

  start_trainer_on 3 bob --forever >/dev/null
  expect_exit 0 b alice status --all --json
  /usr/bin/python3 - "$OUT" <<'PY' || fail "status --all --json: $OUT"
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
  assert_eq "$(api_calls | grep -c "GET /v2/projects/sim-proj/locations/$Z/nodes?")" "1"
  assert_eq "$(api_calls | grep -c "GET /v2/projects/sim-proj/locations/europe-west4-a/nodes?")" "1"
  assert_eq "$(api_calls | wc -l)" "2" "API calls: $(api_calls)"

  expect_exit 0 b alice status --all
  assert_contains "$OUT" "team-v4 (v4-16)  partial      bob: python3 train.py"
  assert_contains "$OUT" "old-v4 (v4-8)    unreachable  gcloud: PREEMPTED"
  assert_eq "$(grep -c '^board-a ' <<<"$OUT")" "1" "board-a once: $OUT"
}
e2e_case gcloud_listing "status --all lists what gcloud finds, one list per zone: READY VMs scanned, others in gcloud's state, the config's own not repeated"

# gcloud failing (the API refuses every request in both zones): an error line
# per zone and for the config's gcloud pod (asked once), the other pods as usual.
gcloud_failing() {
  local cfg=$fail_cfg api_from z
  on_exit "\"\$FAKEPOD\" fault clear"
  for z in us-central2-b europe-west4-a; do
    fakepod fault zone-down $z --code 429 --status RESOURCE_EXHAUSTED --message "Quota exceeded for quota metric 'Read requests'" >/dev/null
  done
  api_from=$(wc -l <"$FAKEPOD_STATE/api.log")
  expect_exit 1 b alice status --all
  assert_contains "$OUT" "gcloud:us-central2-b"
  assert_contains "$OUT" "error        \`gcloud compute tpus tpu-vm list --zone us-central2-b\` failed: ERROR: (gcloud.compute.tpus.tpu-vm.list) RESOURCE_EXHAUSTED: Quota exceeded for quota metric 'Read requests'"
  grep -q '^g  *error .*RESOURCE_EXHAUSTED: Quota exceeded' <<<"$OUT" || fail "pod g: $OUT"
  grep -q '^board-a  *free' <<<"$OUT" || fail "board-a not free: $OUT"
  assert_eq "$(api_calls | grep -c 'GET /v2/projects/sim-proj/locations/us-central2-b/nodes/sim-tpu?')" "1" "describe once: $(api_calls)"
  assert_eq "$(api_calls | grep -c 'GET /v2/projects/sim-proj/locations/[a-z0-9-]*/nodes?')" "2" "a list per zone: $(api_calls)"
  fakepod fault clear >/dev/null
}
e2e_case gcloud_failing "gcloud failing in every zone: an error line per zone and for the config's gcloud pod (asked once), the other pods as usual"

config_mistakes() {
  local bad=$SCRATCH/bad.json
  printf '{ "pods": { %s },\n  "board": { "gcloud": { "project": "sim-proj",\n    "zones": [] } } }\n' "$(carved_pod board-a 0 1)" >"$bad"
  chmod 644 "$bad"
  expect_exit 2 as_user alice "$TPURUN" --config "$bad" status --all
  assert_contains "$ERR" "$bad:3: board.gcloud.zones: list at least one zone"
  printf '{ "pods": { %s },\n  "board": { "gcloud": { "project": "sim-proj",\n    "zone": ["us-central2-b"] } } }\n' "$(carved_pod board-a 0 1)" >"$bad"
  expect_exit 2 as_user alice "$TPURUN" --config "$bad" status --all
  assert_contains "$ERR" "$bad:3: board.gcloud"
  assert_contains "$ERR" "did you mean 'zones'"
}
e2e_case config_mistakes "config mistakes are reported at file:line"

e2e_run
