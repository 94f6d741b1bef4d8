#pragma once
// Human units: durations on the command line ("10s", "500ms", "5m", "2h", "14d"
// or plain seconds "30"), ages for tables (7384s -> "2h03m") and sizes.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace tpurun {

// Throws UsageError (usage_error.hpp) naming the bad text.
std::chrono::milliseconds parse_duration(const std::string& text);
// A duration as the user would type it: 500 -> "500ms", 30000 -> "30s", 90000 -> "1m30s".
std::string format_duration_ms(long long ms);
// Compact age for tables: "45s", "12m", "2h03m", "3d04h".
std::string format_age(long long seconds);
// Binary units for sizes: 512 -> "512 B", 3250000 -> "3.1 MiB".
std::string human_size(std::uint64_t bytes);
// "2026-01-02T03:04:05Z" (the form tpurun writes its times in) as a time
// point; nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> parse_utc_time(const std::string& text);
// The other way: a time point as "2026-01-02T03:04:05Z" (whole seconds).
std::string format_utc_time(std::chrono::system_clock::time_point t);

}  // namespace tpurun
