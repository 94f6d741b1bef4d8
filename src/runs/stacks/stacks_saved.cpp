// The flight recorder's captures in a run's log dir (log_dir_layout.hpp):
// stacks/<UTC time>-<reason>/ with wN.txt per worker and summary.json.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "tpurun/runs/stacks/stacks.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

void make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    throw std::runtime_error(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  }
}

// "2026-11-29T16:30:05Z" -> "20261129T163005Z": a name that sorts by time.
std::string compact_time(const std::string& iso) {
  std::string out;
  for (char c : iso) {
    if (c != '-' && c != ':') out += c;
  }
  return out;
}

}  // namespace

std::string stacks_root(const std::string& log_dir) { return log_dir + "/stacks"; }

std::string save_capture(const std::string& log_dir, const std::string& run_id, const std::string& reason,
                         std::chrono::system_clock::time_point now, const std::vector<WorkerStacks>& stacks) {
  const std::string taken_at = format_utc_time(now);
  make_dir(stacks_root(log_dir));
  std::string dir = stacks_root(log_dir) + "/" + compact_time(taken_at) + "-" + reason;
  for (int n = 2; ::mkdir(dir.c_str(), 0755) != 0; ++n) {
    if (errno != EEXIST || n > 99) throw std::runtime_error(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
    dir = stacks_root(log_dir) + "/" + compact_time(taken_at) + "-" + reason + "-" + std::to_string(n);
  }
  for (const WorkerStacks& s : stacks) {
    write_file_atomic(dir + "/" + s.worker.label() + ".txt", format_worker_stacks(s));
  }
  nlohmann::json doc = stacks_to_json(run_id, stacks);
  doc["reason"] = reason;
  doc["taken_at"] = taken_at;
  write_file_atomic(dir + "/summary.json", doc.dump(2) + "\n");
  return dir;
}

std::vector<SavedCapture> read_captures(const std::string& log_dir) {
  std::vector<SavedCapture> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(stacks_root(log_dir), ec)) {
    const std::string text = read_small_file(entry.path().string() + "/summary.json");
    if (text.empty()) continue;
    try {
      const nlohmann::json doc = nlohmann::json::parse(text);
      out.push_back({entry.path().string(), doc.value("reason", ""), doc.value("taken_at", ""),
                     stacks_from_json(doc)});
    } catch (const std::exception&) {
      continue;  // a capture cut short: the others still count
    }
  }
  std::sort(out.begin(), out.end(), [](const SavedCapture& a, const SavedCapture& b) { return a.dir < b.dir; });
  return out;
}

bool has_capture(const std::string& log_dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(stacks_root(log_dir), ec)) {
    if (std::filesystem::exists(entry.path() / "summary.json", ec)) return true;
  }
  return false;
}

}  // namespace tpurun
