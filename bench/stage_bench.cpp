// tpurun-stage-bench SOURCE STAGING_ROOT USER STAT_CACHE_DIR [THREADS]
// Stages SOURCE once and prints what happened, with the wall time, as JSON.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "tpurun/staging/snapshot.hpp"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s SOURCE STAGING_ROOT USER STAT_CACHE_DIR [THREADS]\n", argv[0]);
    return 2;
  }
  tpurun::SnapshotRequest request;
  request.source_dir = argv[1];
  request.staging_root = argv[2];
  request.user = argv[3];
  request.stat_cache_dir = argv[4];
  request.threads = argc > 5 ? static_cast<unsigned>(std::atoi(argv[5])) : 0;
  request.size_limit = 4ull << 30;
  request.now = std::chrono::system_clock::now();
  tpurun::SystemProcessRunner processes;

  auto start = std::chrono::steady_clock::now();
  auto staged = tpurun::create_snapshot(request, processes, tpurun::CancelToken());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!staged) {
    std::fprintf(stderr, "tpurun-stage-bench: %s\n", staged.error().message.c_str());
    return 1;
  }
  nlohmann::json out = {{"seconds", seconds},
                        {"dir", staged->dir},
                        {"files", staged->files},
                        {"bytes", staged->bytes},
                        {"bytes_reused", staged->bytes_reused},
                        {"files_read", staged->files_read},
                        {"tree_hash", staged->tree_hash},
                        {"git_dirty", staged->git.dirty}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
