#pragma once
// tpurun status --all --watch [INTERVAL]: the board, refreshed until q or
// Ctrl-C. On a terminal the frame is redrawn in place (watch_terminal.hpp);
// otherwise each refresh is a block after a timestamp line, or with --json a
// JSON document on one line. The SSH connections stay open between refreshes.
#include <chrono>
#include <string>

#include "cli/context.hpp"
#include "cli/status.hpp"

namespace tpurun::cli {

// "" -> 5s; "2", "2s", "500ms", "1m". Throws UsageError for 0, junk, < 100ms.
std::chrono::milliseconds parse_watch_interval(const std::string& text);

// 0 after q, 130 after Ctrl-C or SIGTERM.
int run_board_watch(const StatusOptions& options, Context& ctx);

}  // namespace tpurun::cli
