#include "tpurun/util/diagnostics.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <memory>

namespace tpurun {

void log_peak_memory() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) {
    spdlog::debug("peak memory: {:.1f} MiB resident (tpurun itself)", static_cast<double>(usage.ru_maxrss) / 1024);
  }
}

void init_diagnostics(int verbosity) {
  auto log = std::make_shared<spdlog::logger>("tpurun", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  log->set_pattern("tpurun: %H:%M:%S.%e [pid %P] %v");
  log->set_level(verbosity >= 2 ? spdlog::level::trace
                 : verbosity == 1 ? spdlog::level::debug
                                  : spdlog::level::warn);
  spdlog::set_default_logger(std::move(log));
}

spdlog::logger& watcher_log() {
  static const std::shared_ptr<spdlog::logger> log = [] {
    auto l = std::make_shared<spdlog::logger>("watcher", std::make_shared<spdlog::sinks::stdout_sink_mt>());
    l->set_formatter(std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%SZ %v",
                                                                 spdlog::pattern_time_type::utc));
    l->flush_on(spdlog::level::trace);  // a follower reads each line as it comes
    return l;
  }();
  return *log;
}

}  // namespace tpurun
