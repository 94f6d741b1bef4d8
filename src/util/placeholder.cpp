// Keeps tpurun_core non-empty until the first real sources land.
