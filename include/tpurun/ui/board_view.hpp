#pragma once
// How the board shows a pod: a line per pod and the JSON of `status --all`.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tpurun/board/board_entry.hpp"

namespace tpurun {

// The name column: "board-b", or "sim-tpu (v4-64)" when the type is known.
std::string board_label(const BoardEntry& entry);
// "board-b   busy         bob: python3 train.py [run X] on w[0-1], 2m   claim: bob, 59m left (...): note"
std::string format_board_line(const BoardEntry& entry, WallClock::time_point now, size_t name_width);
nlohmann::json board_entry_to_json(const BoardEntry& entry, WallClock::time_point now);

// {"pods": [...]}: one record per entry.
nlohmann::json board_to_json(const std::vector<BoardEntry>& entries, WallClock::time_point now);
// One record of `tpurun claims --json`: {pod, user, host, note, created_at,
// expires_at, seconds_left, file}.
nlohmann::json live_claim_to_json(const Claim& claim, WallClock::time_point now);
}  // namespace tpurun
