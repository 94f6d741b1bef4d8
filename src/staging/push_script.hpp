#pragma once
// The worker's side of a snapshot push, a python3 program (push_script.cpp).
namespace tpurun::staging {
const char* push_worker_program();
}  // namespace tpurun::staging
