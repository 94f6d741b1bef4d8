#!/usr/bin/env bash
# Collapsed live output of `tpurun exec` on the 8-worker pod: a line every
# worker prints is shown once as [w0-7] ..., distinct lines keep their
# per-worker prefix and order, --raw shows every line, stderr stays on stderr,
# late workers are noted, `\r` progress shows its final state, and a 100 KiB
# line is cut at 64 KiB with a note.
source "$(dirname "$0")/lib.sh"
N=$FAKEPOD_WORKERS
last=$((N - 1))

# synced NAME BODY: a shell script that waits until every worker has reached
# it (a barrier on the shared scratch dir), then runs BODY. Workers connect at
# different moments; the barrier keeps this test independent of how far apart.
synced() {
  local dir
  dir=$(scratch_dir alice)/barrier-$1
  as_user alice mkdir -p "$dir"
  printf 'touch %s/$(hostname); while [ $(ls %s | wc -l) -lt %d ]; do sleep 0.05; done; %s' \
    "$dir" "$dir" "$N" "$2"
}
count() {  # TEXT PATTERN: lines of TEXT matching the grep -E PATTERN
  grep -cE "$2" <<<"$1" || true
}
line_no() {  # TEXT FIXED: number of the first line of TEXT containing FIXED
  grep -nF -- "$2" <<<"$1" | head -1 | cut -d: -f1
}

collapse_identical() {
  local first final i host_line
  expect_exit 0 tpurun_as alice exec -- sh -c "$(synced a 'echo same; hostname; echo end')"
  assert_eq "$(count "$OUT" ' same$')" 1 "'same' shown once"
  assert_contains "$OUT" "[w0-$last] same"
  assert_eq "$(count "$OUT" ' end$')" 1 "'end' shown once"
  first=$(line_no "$OUT" "[w0-$last] same")
  final=$(line_no "$OUT" "[w0-$last] end")
  for i in $(seq 0 "$last"); do
    host_line=$(line_no "$OUT" "[w$i $(worker_ip "$i")] $(worker_hostname "$i")")
    [[ -n $host_line ]] || fail "worker $i's host name is missing"
    ((first < host_line && host_line < final)) || fail "worker $i's lines are out of order"
  done
  assert_eq "$(wc -l <<<"$OUT")" $((N + 2))
}
e2e_case collapse_identical "identical lines are shown once, labelled with every worker; distinct lines keep their prefix, in each worker's order"

raw_every_line() {
  local flag i
  for flag in --raw --no-collapse; do
    expect_exit 0 tpurun_as alice exec "$flag" -- sh -c "$(synced "raw$flag" 'echo same')"
    assert_eq "$(count "$OUT" ' same$')" "$N" "$flag shows all"
    for i in $(seq 0 "$last"); do assert_contains "$OUT" "[w$i $(worker_ip "$i")] same"; done
  done
}
e2e_case raw_every_line "--raw (and its alias --no-collapse) prints every line of every worker"

per_stream() {
  expect_exit 0 tpurun_as alice exec -- sh -c "$(synced err 'echo warn >&2; echo out')"
  assert_contains "$ERR" "[w0-$last] warn"
  assert_not_contains "$OUT" "warn"
  assert_contains "$OUT" "[w0-$last] out"
}
e2e_case per_stream "collapsing is per stream: stderr's shared line stays on stderr"

late_worker() {
  local out=$SCRATCH/late.out body
  # w3 prints the shared line once tpurun has shown the others' (the workers
  # see its output here, in the scratch dir; at most 120 s): late whatever
  # the machine's speed.
  body='[ "$TPU_WORKER_ID" = 3 ] && { i=0; until grep -q "] shared$" '$out'; do
    i=$((i + 1)); [ $i -le 1200 ] || break; sleep 0.1; done; }; echo shared'
  RC=0
  tpurun_as alice exec -- sh -c "$(synced late "$body")" >"$out" 2>"$SCRATCH/late.err" || RC=$?
  OUT=$(<"$out")
  assert_eq "$RC" 0 "exec: $(<"$SCRATCH/late.err")"
  assert_contains "$OUT" "[w0-2,4-$last] shared"
  assert_contains "$OUT" "[+w3] shared"
  assert_eq "$(count "$OUT" 'shared$')" 2
}
e2e_case late_worker "a worker that prints the shared line well after the others is added as a late line"

unreachable_worker() {
  stop_worker 2
  expect_exit 255 tpurun_as alice exec -- echo ok
  assert_eq "$(count "$OUT" ' ok$')" 1
  assert_contains "$OUT" "[w0-1,3-$last] ok"
  assert_contains "$ERR" "w2 $(worker_ip 2): cannot connect"
  fakepod start-worker 2
}
e2e_case unreachable_worker "a worker that cannot be reached holds nothing up and is left out of the label"

carriage_return() {
  expect_exit 0 tpurun_as alice exec -- sh -c "$(synced cr "printf 'a\\rb\\rc\\n'")"
  assert_contains "$OUT" "[w0-$last] c"
  assert_eq "$(wc -l <<<"$OUT")" 1
  expect_exit 0 tpurun_as alice exec --raw --worker 0-1 -- printf 'a\rb\rc\n'
  assert_eq "$(sort <<<"$OUT")" "[w0 $(worker_ip 0)] c"$'\n'"[w1 $(worker_ip 1)] c"  # raw: in either order
}
e2e_case carriage_return "a progress bar redrawn with \\r shows its final state only, collapsed or raw"

long_line() {
  local cut_line xs
  expect_exit 0 tpurun_as alice exec -- sh -c "$(synced long "head -c 102400 /dev/zero | tr '\\0' x; echo; echo after")"
  cut_line=$(grep -F 'line cut at 64 KiB' <<<"$OUT") || fail "no cut line in the output"
  assert_eq "$(count "$OUT" 'line cut at 64 KiB')" 1
  xs=${cut_line#"[w0-$last] "}
  xs=${xs%" ... [line cut at 64 KiB]"}
  assert_eq "${#xs}" 65536 "length of the cut line"
  [[ $xs =~ ^x+$ ]] || fail "the cut line holds something other than the x's"
  assert_contains "$OUT" "[w0-$last] after"
}
e2e_case long_line "a 100 KiB line is cut at 64 KiB with a note; the next line is intact"

terminal_status_line() {
  local tty_dir
  # The bottom line shows the workers' states and the latest \r state of a
  # progress bar (it is redrawn every 100 ms; the bar holds each state for a
  # second). Run under script(1) for a pseudo-terminal.
  tty_dir=$(scratch_dir alice)
  printf 'exec %q --config %q exec -- sh -c %q\n' "$TPURUN" "$FAKEPOD_CONFIG" \
    "$(synced tty "printf '\\r50%%'; sleep 1; printf '\\r100%%\\n'")" >"$tty_dir/tty.sh"
  chmod 644 "$tty_dir/tty.sh"
  expect_exit 0 as_user alice script -qec "bash $tty_dir/tty.sh" /dev/null
  assert_contains "$OUT" "$N workers: $N running"
  [[ $OUT =~ w[0-9]+:\ 50% ]] || fail "no progress state on the bottom line: $(cat -v <<<"$OUT")"
  assert_contains "$OUT" "[w0-$last]"$'\033[0m'" 100%"
}
e2e_case terminal_status_line "on a terminal, the bottom line shows the workers' states and a progress bar's latest state"

raw_refused() {
  expect_exit 2 tpurun_as alice exec --raw --json -- true
  assert_contains "$ERR" "--json never collapses lines: drop --raw"
  expect_exit 2 tpurun_as alice exec --no-collapse --gather -- true
  assert_contains "$ERR" "--gather never collapses lines"
}
e2e_case raw_refused "--raw only changes streamed output: with --json or --gather it is refused"

e2e_run
