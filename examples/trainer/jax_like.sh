# What each host of a data-parallel JAX job prints: the same banner and the
# same (all-reduced) loss on every host, one line of its own, and one host
# that lags (worker 5, at step 2). For the README's before/after on 32 workers:
#   tpurun stage --raw -- sh jax_like.sh      tpurun stage -- sh jax_like.sh
n=${TPURUN_NUM_WORKERS:-1} w=${TPURUN_WORKER:-0}
echo "jax.device_count() = $((n * 4))"
echo "jax.process_index() = $w"
sleep 1
loss=800
for step in 1 2 3; do
  if [ "$step" = 2 ] && [ "$w" = 5 ]; then sleep 3; fi
  echo "step $step loss 0.$loss"
  loss=$((loss - 100))
  sleep 1
done
