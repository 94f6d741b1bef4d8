// top --watch: a look every INTERVAL, start to start; a look that takes
// longer is followed at once. The caller's look keeps its connections.
#include "tpurun/ui/top_watch.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <thread>

#include "tpurun/board/claims.hpp"
#include "tpurun/ui/board_watch.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/ui/top_view.hpp"
#include "tpurun/util/duration.hpp"
#include "ui/watch_terminal.hpp"

namespace tpurun {
namespace {

using Steady = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kTick{100};

int watch_stream(const TopWatchOptions& o, Context& ctx, const TopLook& look, std::chrono::milliseconds interval) {
  while (!ctx.cancel.cancelled()) {
    const auto start = Steady::now();
    const auto now = WallClock::now();
    auto looks = look(ctx.cancel);
    if (ctx.cancel.cancelled()) break;
    if (o.json) {
      nlohmann::json doc = top_to_json(o.pod, looks);
      doc["time"] = format_utc_time(now);
      fmt::print(ctx.out, "{}\n", doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    } else {
      fmt::print(ctx.out, "--- {} ---\n{}", format_utc_time(now), format_top(o.pod, looks));
    }
    std::fflush(ctx.out);
    while (!ctx.cancel.cancelled() && Steady::now() < start + interval) std::this_thread::sleep_for(kTick);
  }
  return 130;
}

int watch_terminal(const TopWatchOptions& o, Context& ctx, const TopLook& look, std::chrono::milliseconds interval) {
  std::atomic<bool> stop{false};
  const CancelToken stop_token(&stop);
  auto term = open_watch_terminal(::fileno(ctx.out), STDIN_FILENO);
  const std::string every = format_duration_ms(interval.count());
  std::vector<std::string> body{"looking at the workers..."};
  auto draw = [&](const std::string& header) {
    std::vector<std::string> frame{header, ""};
    frame.insert(frame.end(), body.begin(), body.end());
    term->draw(frame);
  };
  bool quit = false;
  while (!quit && !ctx.cancel.cancelled()) {
    const auto start = Steady::now();
    const auto now = WallClock::now();
    draw(fmt::format("tpurun top, every {}   {}   refreshing...   q quits", every, format_utc_time(now)));
    std::vector<WorkerLook> looks;
    std::exception_ptr failed;
    std::atomic<bool> done{false};
    std::thread worker([&] {
      try {
        looks = look(stop_token);
      } catch (...) {
        failed = std::current_exception();
      }
      done = true;
    });
    while (!done) {  // keys and signals stay live while the workers answer
      if (term->wait_for_quit(kTick) || ctx.cancel.cancelled()) stop = quit = true;
    }
    worker.join();
    if (failed) {
      term.reset();  // the terminal back before the error is printed
      std::rethrow_exception(failed);
    }
    if (quit) break;
    body.clear();
    body.push_back(format_top_summary(o.pod, summarize_top(looks)));
    body.push_back("");
    for (const std::string& row : format_top_rows(looks)) body.push_back(row);
    const std::string header = fmt::format("tpurun top, every {}   {}   q quits", every, format_utc_time(now));
    draw(header);
    while (!quit && !ctx.cancel.cancelled()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(start + interval - Steady::now());
      if (left.count() <= 0) break;
      if (term->wait_for_quit(std::min(left, kTick))) quit = true;
      if (term->resized()) draw(header);
    }
  }
  term.reset();  // the terminal as it was, before anything else is printed
  return ctx.cancel.cancelled() ? 130 : 0;
}

}  // namespace

int run_top_watch(const TopWatchOptions& o, Context& ctx, const TopLook& look) {
  const auto interval = parse_watch_interval(o.interval);
  if (!o.json && ::isatty(::fileno(ctx.out))) return watch_terminal(o, ctx, look, interval);
  return watch_stream(o, ctx, look, interval);
}

}  // namespace tpurun
