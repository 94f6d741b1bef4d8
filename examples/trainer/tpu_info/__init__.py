# The fake trainer's message classes live in tpu_info/proto/ (see there). The
# package keeps this name, the one the trainer's copies of it were first made
# under, because the scripts that install the trainer on the simulator's
# workers copy tpu_info/ (scripts/demo, tests/e2e/lib.sh, bench/top.sh).
