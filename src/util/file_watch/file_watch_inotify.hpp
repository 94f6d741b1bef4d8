#pragma once
// The inotify FileWatch's seams, for tests: how often it sweeps, and which
// directory inotify listens to (another one than `dir` makes it deaf, as it
// is on NFS to writes from other clients).
#include <chrono>
#include <memory>
#include <string>

#include "tpurun/util/file_watch/file_watch.hpp"

namespace tpurun {

constexpr std::chrono::milliseconds kInotifySweep{5000};

std::unique_ptr<FileWatch> make_inotify_watch(const std::string& dir, const std::string& heard_dir,
                                              BackoffOptions backoff, std::chrono::milliseconds sweep_every);

}  // namespace tpurun
