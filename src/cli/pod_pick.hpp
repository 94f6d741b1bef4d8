#pragma once
// `--pod auto` and `--pod 'v4-32*'`: the first pod in config order that is
// free on every worker and not claimed by another user.
#include <string>
#include <vector>

#include "cli/context.hpp"

namespace tpurun::cli {

// True for "auto" and for names with glob characters (* ? [).
bool is_pod_pattern(const std::string& pod);

// When the requested pod (--pod, else TPURUN_POD) is a pattern: scans the
// matching pods in config order, prints to ctx.err which one it picked and
// why each earlier one was skipped, and sets ctx.pod_request.pod to it.
// Throws std::runtime_error listing every candidate's state when none is
// free, UsageError when no pod matches. A plain name is left alone.
void pick_pod(Context& ctx, bool ignore_claim);

}  // namespace tpurun::cli
