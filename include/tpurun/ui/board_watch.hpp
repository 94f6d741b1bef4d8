#pragma once
// tpurun status --all --watch [INTERVAL]: the board, refreshed until q or
// Ctrl-C. On a terminal the frame is redrawn in place (watch_terminal.hpp);
// otherwise each refresh is a block after a timestamp line, or with --json a
// JSON document on one line. The SSH connections stay open between refreshes.
#include <chrono>
#include <string>

#include "tpurun/transport/context.hpp"

namespace tpurun {

// "" -> 5s; "2", "2s", "500ms", "1m". Throws UsageError for 0, junk, < 100ms.
std::chrono::milliseconds parse_watch_interval(const std::string& text);

struct BoardWatchOptions {
  std::string interval;  // --watch's value: "" for the default
  bool json = false;
  int fanout = 64;
};

// 0 after q, 130 after Ctrl-C or SIGTERM.
int run_board_watch(const BoardWatchOptions& options, Context& ctx);

}  // namespace tpurun
