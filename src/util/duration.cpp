#include "tpurun/util/duration.hpp"

#include <fmt/format.h>

#include <cctype>
#include <ctime>

#include "tpurun/util/usage_error.hpp"

namespace tpurun {

std::chrono::milliseconds parse_duration(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i), unit = text.substr(i);
  double value = 0;
  try {
    size_t used = 0;
    value = std::stod(number, &used);
    if (used != number.size()) throw std::invalid_argument(number);
  } catch (const std::exception&) {
    throw UsageError(fmt::format("'{}' is not a duration (examples: 10s, 500ms, 5m, 2h, 14d)", text));
  }
  double ms_per_unit = 0;
  if (unit.empty() || unit == "s") ms_per_unit = 1000;
  else if (unit == "ms") ms_per_unit = 1;
  else if (unit == "m" || unit == "min") ms_per_unit = 60e3;
  else if (unit == "h") ms_per_unit = 3600e3;
  else if (unit == "d") ms_per_unit = 86400e3;
  else throw UsageError(fmt::format("'{}': unknown unit '{}' (use ms, s, m, h or d)", text, unit));
  // Past this the product no longer fits (or means anything): refused, never
  // wrapped around into a negative or zero wait.
  constexpr double kLongest = 3650 * 86400e3;
  if (!(value * ms_per_unit <= kLongest)) {
    throw UsageError(fmt::format("'{}' is too long a duration: at most 3650d", text));
  }
  return std::chrono::milliseconds(static_cast<long long>(value * ms_per_unit));
}

std::string format_duration_ms(long long ms) {
  if (ms < 1000) return fmt::format("{}ms", ms);
  if (ms % 1000 != 0 && ms < 60000) return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000);
  long long s = ms / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return s % 60 ? fmt::format("{}m{}s", s / 60, s % 60) : fmt::format("{}m", s / 60);
  return s % 3600 ? fmt::format("{}h{}m", s / 3600, (s % 3600) / 60) : fmt::format("{}h", s / 3600);
}

std::string format_age(long long s) {
  if (s < 0) s = 0;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m", s / 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d{:02}h", s / 86400, (s % 86400) / 3600);
}

std::string human_size(std::uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) value /= 1024, ++unit;
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", value, units[unit]);
}

std::optional<std::chrono::system_clock::time_point> parse_utc_time(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

std::string format_utc_time(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace tpurun
