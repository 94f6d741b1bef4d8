#include "runs/watcher/stall_watch.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "tpurun/board/claims.hpp"
#include "tpurun/runs/record/run_state.hpp"

namespace tpurun {

StallWatch::StallWatch(const RunRecord& record, std::string logs_root, Transport& transport, int fanout,
                             Say say)
    : record_(record),
      logs_root_(std::move(logs_root)),
      transport_(transport),
      fanout_(fanout),
      say_(std::move(say)),
      stall_(std::chrono::milliseconds(record.gang.stall_after_ms)) {}

// A stall watch needs the metrics; a run watched by an older setup without
// them simply never stalls.
void StallWatch::start(const std::vector<Worker>& workers) {
  duty_.reset();  // one prober's connections at a time
  duty_ = std::make_unique<DutyProber>(transport_, workers, fanout_,
                                       stall_poll_interval(std::chrono::milliseconds(record_.gang.stall_after_ms)));
}

// Bytes in the workers' logs: a new line anywhere makes it grow.
long long StallWatch::log_bytes() const {
  long long total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(record_.log_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("worker", 0) != 0 || name.find(".log") == std::string::npos) continue;
    const auto size = entry.file_size(ec);
    if (!ec) total += static_cast<long long>(size);
  }
  return total;
}

// One metrics round at a time: is every worker at 0% with no new log line,
// and for how long? report only records it; stop and restart fail the attempt.
std::optional<StallWatch::Stalled> StallWatch::look() {
  if (!duty_) return std::nullopt;
  auto round = duty_->take();
  if (!round) return std::nullopt;
  const long long bytes = log_bytes();
  const bool grew = bytes != log_bytes_;
  log_bytes_ = bytes;
  const auto now = std::chrono::system_clock::now();
  const std::optional<bool> idle = gang_idle(*round);
  // The board's idle time: the chips alone, whatever the logs say.
  if (idle != true && !idle_since_.empty()) {
    idle_since_.clear();
    publish_idle(std::nullopt);
  } else if (idle == true && idle_since_.empty()) {
    idle_since_ = format_utc_time(now);
    publish_idle(now);
  }
  const auto since = stall_.observe(idle, grew, now);
  if (!since) {
    if (!stalled_since_.empty()) say_("the run is active again (a chip above 0% or a new log line)");
    stalled_since_.clear();
    return std::nullopt;
  }
  if (!stalled_since_.empty()) return std::nullopt;
  stalled_since_ = format_utc_time(*since);
  const std::string detail =
      fmt::format("stalled: every worker at 0% duty cycle and no new log line since {}", stalled_since_);
  say_(fmt::format("{} (--stall-after {}s, on stall: {})", detail, record_.gang.stall_after_ms / 1000,
                   record_.gang.on_stall));
  if (record_.gang.on_stall == "report") return std::nullopt;
  return Stalled{now, detail, record_.gang.on_stall == "restart"};
}

void StallWatch::clear() {
  stall_.reset();
  stalled_since_.clear();
  if (!idle_since_.empty()) publish_idle(std::nullopt);
  idle_since_.clear();
}

// The board's mark (run dirs are private; the board is for the team).
void StallWatch::publish_idle(std::optional<Time> since) {
  if (logs_root_.empty()) return;
  try {
    Board board(logs_root_);
    if (since) board.mark_idle(record_.run_id, record_.user, *since);
    else board.clear_idle(record_.run_id);
  } catch (const std::exception& e) {
    if (!idle_mark_failed_) say_(fmt::format("cannot mark the run idle on the board: {}", e.what()));
    idle_mark_failed_ = true;
  }
}

}  // namespace tpurun
