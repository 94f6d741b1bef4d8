#include "tpurun/pod/worker_select.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

namespace tpurun {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Digits only: "+1", "0x2" and "1e3" are typos here, not numbers. Nine digits
// keep the value inside int; anything longer is out of range anyway.
std::optional<int> parse_index(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

class SelectionParser {
 public:
  SelectionParser(const std::string& spec, int count) : spec_(spec), count_(count) {}

  std::vector<int> parse() {
    if (count_ <= 0)
      throw UsageError("bad worker selection " + quote(spec_) + ": the pod has no workers");
    if (trim(spec_).empty()) fail("empty worker selection; use 'all', N, N,M or N-M");
    std::vector<int> picked;
    std::string_view rest = spec_;
    while (true) {
      size_t comma = rest.find(',');
      add_token(trim(rest.substr(0, comma)), picked);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    std::sort(picked.begin(), picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    return picked;
  }

 private:
  void add_token(std::string_view token, std::vector<int>& picked) {
    if (token.empty()) fail("empty item in worker list");
    if (token == "all") {
      for (int i = 0; i < count_; ++i) picked.push_back(i);
      return;
    }
    if (token.front() == '-') fail(quote(token) + ": worker indices cannot be negative");
    size_t dash = token.find('-');
    if (dash == std::string_view::npos) {
      picked.push_back(checked(token, token));
      return;
    }
    int first = checked(trim(token.substr(0, dash)), token);
    int last = checked(trim(token.substr(dash + 1)), token);
    if (first > last)
      fail(quote(token) + ": reversed range; write " + std::to_string(last) + "-" +
           std::to_string(first));
    for (int i = first; i <= last; ++i) picked.push_back(i);
  }

  int checked(std::string_view number, std::string_view token) {
    auto index = parse_index(number);
    if (!index) fail(quote(token) + " is not a worker index, a range N-M or 'all'");
    if (*index >= count_) fail("worker " + std::string(number) + " is out of range");
    return *index;
  }

  static std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }

  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError("bad worker selection " + quote(spec_) + ": " + why + " (valid workers: 0.." +
                     std::to_string(count_ - 1) + ")");
  }

  const std::string& spec_;
  int count_;
};

}  // namespace

std::vector<int> parse_worker_selection(const std::string& spec, int count) {
  return SelectionParser(spec, count).parse();
}

Target select_workers(PodConfig pod, const std::string& spec) {
  Target target{std::move(pod), {}};
  const auto& all = target.pod.workers;
  for (int index : parse_worker_selection(spec, static_cast<int>(all.size()))) {
    target.workers.push_back(all[static_cast<size_t>(index)]);
  }
  return target;
}

}  // namespace tpurun
