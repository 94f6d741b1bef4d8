#include "tpurun/fanout/follow_status.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

constexpr size_t kNamedQuiet = 3;

std::vector<const WorkerActivity*> running(const std::vector<WorkerActivity>& workers) {
  std::vector<const WorkerActivity*> result;
  for (const WorkerActivity& w : workers) {
    if (w.state == WorkerRunState::running) result.push_back(&w);
  }
  return result;
}

}  // namespace

std::vector<int> quiet_workers(const std::vector<WorkerActivity>& workers, const QuietRule& rule) {
  std::vector<const WorkerActivity*> live = running(workers);
  if (live.size() < 2) return {};
  std::sort(live.begin(), live.end(), [](const WorkerActivity* a, const WorkerActivity* b) {
    return a->quiet != b->quiet ? a->quiet > b->quiet : a->worker < b->worker;
  });
  // The lower median of the silences: robust to the quiet ones themselves.
  const double median = static_cast<double>(live[live.size() / 2]->quiet.count());
  std::vector<int> quiet;
  for (const WorkerActivity* w : live) {
    const double silence = static_cast<double>(w->quiet.count());
    if (w->quiet < rule.at_least || silence < rule.times_median * median) break;
    quiet.push_back(w->worker);
  }
  return quiet;
}

std::string format_follow_status(const std::vector<WorkerActivity>& workers, const QuietRule& rule) {
  size_t counts[3] = {0, 0, 0};
  for (const WorkerActivity& w : workers) ++counts[static_cast<int>(w.state)];
  std::string text = fmt::format("{} worker{}:", workers.size(), workers.size() == 1 ? "" : "s");
  const char* const names[3] = {"running", "exited", "failed"};
  bool first = true;
  for (int state = 0; state < 3; ++state) {
    if (counts[state] == 0 && state != 0) continue;
    text += fmt::format("{} {} {}", first ? "" : ",", counts[state], names[state]);
    first = false;
  }
  const std::vector<int> quiet = quiet_workers(workers, rule);
  if (quiet.empty()) return text;
  auto silence_of = [&](int index) -> long long {
    for (const WorkerActivity& w : workers) {
      if (w.worker == index) return w.quiet.count();
    }
    return 0LL;
  };
  text += " · quiet:";
  for (size_t i = 0; i < quiet.size() && i < kNamedQuiet; ++i) {
    text += fmt::format("{} w{} {}", i == 0 ? "" : ",", quiet[i], format_age(silence_of(quiet[i])));
  }
  if (quiet.size() > kNamedQuiet) text += fmt::format(" +{} more", quiet.size() - kNamedQuiet);
  long long others = 0;
  for (const WorkerActivity* w : running(workers)) {
    if (std::find(quiet.begin(), quiet.end(), w->worker) == quiet.end()) {
      others = std::max<long long>(others, w->quiet.count());
    }
  }
  text += fmt::format(" (others ≤ {})", format_age(others));
  return text;
}

}  // namespace tpurun
