#pragma once
// Snapshot names, as run_staging.sh made them: <yymmddHHMMSS>-<6 random
// [a-z0-9]>-<7-char sha|nogit>-code, the time in local time.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace tpurun::staging {

std::string snapshot_name(std::chrono::system_clock::time_point now, std::string_view suffix,
                          std::string_view short_sha);

// Whether `name` has the shape of a snapshot name (ours or run_staging.sh's).
bool is_snapshot_name(std::string_view name);

// The time in the name (local time), when it parses.
std::optional<std::chrono::system_clock::time_point> snapshot_name_time(std::string_view name);

// 6 random characters from [a-z0-9].
std::string random_suffix();

}  // namespace tpurun::staging
