// status --all --watch: one BoardScanner (kept connections), scanned every
// INTERVAL, start to start; a refresh that takes longer is followed at once.
#include "tpurun/ui/board_watch.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "tpurun/board/board_scan.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/ui/board_view.hpp"
#include "tpurun/util/duration.hpp"
#include "ui/watch_terminal.hpp"

namespace tpurun {
namespace {

using Steady = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kTick{100};

// Waits until `until`, in ticks; true when asked to stop (q, or a signal).
bool wait_until(Steady::time_point until, const CancelToken& cancel, WatchTerminal* term,
                const std::function<void()>& on_resize = {}) {
  while (!cancel.cancelled()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Steady::now());
    if (left.count() <= 0) return false;
    if (term == nullptr) {
      std::this_thread::sleep_for(std::min(left, kTick));
      continue;
    }
    if (term->wait_for_quit(std::min(left, kTick))) return true;
    if (term->resized() && on_resize) on_resize();
  }
  return true;
}

// Not a terminal: a block per refresh (lines as pods answer), or JSON lines.
int watch_stream(const BoardWatchOptions& o, Context& ctx, std::chrono::milliseconds interval) {
  BoardScanner scanner(ctx, o.fanout, true);
  std::set<std::string> warned;
  while (!ctx.cancel.cancelled()) {
    const auto start = Steady::now();
    const auto now = WallClock::now();
    if (!o.json) fmt::print(ctx.out, "--- {} ---\n", format_utc_time(now));
    std::fflush(ctx.out);
    auto entries = scanner.scan(ctx.cancel, now, [&](size_t, const BoardEntry& e) {
      for (const std::string& w : e.warnings) {
        if (warned.insert(w).second) fmt::print(ctx.err, "tpurun: warning: {}\n", w);
      }
      if (!o.json) fmt::print(ctx.out, "{}\n", format_board_line(e, now, scanner.name_width()));
      std::fflush(ctx.out);
    });
    if (ctx.cancel.cancelled()) break;
    if (o.json) {
      nlohmann::json doc = board_to_json(entries, now);
      doc["time"] = format_utc_time(now);
      fmt::print(ctx.out, "{}\n", doc.dump());
      std::fflush(ctx.out);
    }
    if (wait_until(start + interval, ctx.cancel, nullptr)) break;
  }
  return 130;
}

// A terminal: one frame, each pod's line replaced as the pod answers.
int watch_terminal(const BoardWatchOptions& o, Context& ctx, std::chrono::milliseconds interval) {
  BoardScanner scanner(ctx, o.fanout, true);
  std::atomic<bool> stop{false};
  const CancelToken stop_token(&stop);
  auto term = open_watch_terminal(::fileno(ctx.out), STDIN_FILENO);
  std::mutex mu;
  std::string header;
  std::vector<std::string> lines;
  for (const std::string& pod : scanner.pods()) lines.push_back(fmt::format("{:<{}}  scanning...", pod, scanner.name_width()));
  std::vector<std::string> warnings;
  auto redraw = [&] {  // under mu
    std::vector<std::string> frame{header, ""};
    frame.insert(frame.end(), lines.begin(), lines.end());
    for (const std::string& w : warnings) frame.push_back("warning: " + w);
    term->draw(frame);
  };
  const std::string every = format_duration_ms(interval.count());
  bool quit = false;
  while (!quit && !ctx.cancel.cancelled()) {
    const auto start = Steady::now();
    const auto now = WallClock::now();
    {
      std::lock_guard lock(mu);
      header = fmt::format("tpurun status --all, every {}   {}   scanning...   q quits", every, format_utc_time(now));
      redraw();
    }
    std::atomic<bool> done{false};
    std::exception_ptr failed;
    auto on_entry = [&](size_t i, const BoardEntry& e) {
      std::lock_guard lock(mu);
      lines[i] = format_board_line(e, now, scanner.name_width());
      for (const std::string& w : e.warnings) {
        if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
      }
      redraw();
    };
    std::thread scan([&] {
      try {
        scanner.scan(stop_token, now, on_entry);
      } catch (...) {
        failed = std::current_exception();
      }
      done = true;
    });
    while (!done) {  // keys and signals stay live while the pods answer
      if (term->wait_for_quit(kTick) || ctx.cancel.cancelled()) stop = quit = true;
    }
    scan.join();
    if (failed) {
      term.reset();  // the terminal back before the error is printed
      std::rethrow_exception(failed);
    }
    if (quit) break;
    {
      std::lock_guard lock(mu);
      header = fmt::format("tpurun status --all, every {}   {}   q quits", every, format_utc_time(now));
      redraw();
    }
    quit = wait_until(start + interval, ctx.cancel, term.get(), [&] {
      std::lock_guard lock(mu);
      redraw();
    });
  }
  term.reset();  // the terminal as it was, before anything else is printed
  return ctx.cancel.cancelled() ? 130 : 0;
}

}  // namespace

std::chrono::milliseconds parse_watch_interval(const std::string& text) {
  if (text.empty()) return std::chrono::seconds(5);
  std::chrono::milliseconds interval{0};
  try {
    interval = parse_duration(text);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--watch {}: {}; give the time between refreshes, e.g. --watch 5 (seconds), "
                                 "--watch 500ms, --watch 1m",
                                 text, e.what()));
  }
  if (interval < std::chrono::milliseconds(100)) {
    throw UsageError(fmt::format("--watch {}: at least 100ms between refreshes, e.g. --watch 5", text));
  }
  return interval;
}

int run_board_watch(const BoardWatchOptions& o, Context& ctx) {
  const auto interval = parse_watch_interval(o.interval);
  if (!o.json && ::isatty(::fileno(ctx.out))) return watch_terminal(o, ctx, interval);
  return watch_stream(o, ctx, interval);
}

}  // namespace tpurun
