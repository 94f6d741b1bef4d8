#pragma once
// tpurun top --watch [INTERVAL]: the look at the pod, refreshed until q or
// Ctrl-C, as `status --all --watch` does it: redrawn in place on a terminal;
// otherwise a block per refresh after a timestamp line, or with --json one
// JSON document per line.
#include <functional>
#include <string>
#include <vector>

#include "tpurun/tpu/top_look.hpp"
#include "tpurun/transport/context.hpp"

namespace tpurun {

struct TopWatchOptions {
  std::string interval;  // --watch's value: "" for the default (5s)
  bool json = false;
  std::string pod;
};

// One look at the pod; the watch calls it once per refresh.
using TopLook = std::function<std::vector<WorkerLook>(const CancelToken&)>;

// 0 after q, 130 after Ctrl-C or SIGTERM.
int run_top_watch(const TopWatchOptions& options, Context& ctx, const TopLook& look);

}  // namespace tpurun
