#pragma once
// `--pod auto` and `--pod 'v4-32*'`: the first pod in config order that is
// free on every worker and not claimed by another user.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/transport/context.hpp"

namespace tpurun {

// True for "auto" and for names with glob characters (* ? [).
bool is_pod_pattern(const std::string& pod);

// When the requested pod (--pod, else TPURUN_POD) is a pattern: scans the
// matching pods in config order, prints to ctx.err which one it picked and
// why each earlier one was skipped, and sets ctx.pod_request.pod to it.
// Throws std::runtime_error listing every candidate's state when none is
// free, UsageError when no pod matches. A plain name is left alone.
// With `wait_every`, none free is not an error: it scans again every that
// long, saying what it waits for whenever that changes, until a pod frees
// up or Ctrl-C (Interrupted).
// `one_pod_may_wait`: --wait on a single pod means something else to the
// caller (stage waits for its workers), so it is no mistake there.
void pick_pod(Context& ctx, bool ignore_claim, std::optional<std::chrono::milliseconds> wait_every = std::nullopt,
              bool one_pod_may_wait = false);

// --wait [INTERVAL] of stage and exec: nullopt when not given; 30s when given bare.
std::optional<std::chrono::milliseconds> parse_pod_wait(const std::optional<std::string>& text, bool dry_run);

}  // namespace tpurun
