#include "tpurun/runs/watcher/restart_codes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace tpurun {
namespace {

std::optional<int> code(const std::string& s) {
  int value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < 1 || value > 255) return std::nullopt;
  return value;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

}  // namespace

RestartCodes RestartCodes::xpk_defaults() {
  RestartCodes codes;
  codes.add(42, 42);
  codes.add(127, 255);
  return codes;
}

std::optional<RestartCodes> RestartCodes::parse(const std::string& spec, std::string* error) {
  RestartCodes codes = xpk_defaults();
  if (trim(spec).empty()) return codes;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string item = trim(spec.substr(start, comma - start));
    const size_t dash = item.find('-');
    const auto first = code(dash == std::string::npos ? item : item.substr(0, dash));
    const auto last = dash == std::string::npos ? first : code(item.substr(dash + 1));
    if (!first || !last || *last < *first) {
      if (error) {
        *error = fmt::format("'{}' is not an exit code (1-255) or a range of them such as 3-5", item);
      }
      return std::nullopt;
    }
    codes.add(*first, *last);
    start = comma + 1;
  }
  return codes;
}

void RestartCodes::add(int first, int last) {
  ranges_.emplace_back(first, last);
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<std::pair<int, int>> merged;
  for (const auto& r : ranges_) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
}

bool RestartCodes::contains(int c) const {
  return std::any_of(ranges_.begin(), ranges_.end(), [c](const auto& r) { return c >= r.first && c <= r.second; });
}

std::string RestartCodes::text() const {
  std::string out;
  for (const auto& [a, b] : ranges_) {
    out += out.empty() ? "" : ",";
    out += a == b ? std::to_string(a) : fmt::format("{}-{}", a, b);
  }
  return out;
}

}  // namespace tpurun
