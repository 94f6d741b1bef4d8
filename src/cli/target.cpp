#include "cli/target.hpp"

#include "tpurun/local_transport.hpp"
#include "tpurun/ssh_transport.hpp"
#include "tpurun/worker_select.hpp"

namespace tpurun::cli {

void add_target_options(CLI::App& cmd, TargetOptions& options) {
  cmd.add_option("-w,--worker", options.workers,
                 "Workers to act on: all, N, N,M or N-M (gcloud's syntax)")
      ->default_str("all");
  cmd.add_option("--fanout", options.fanout, "At most this many workers at once")
      ->default_str("64")
      ->check(CLI::Range(1, 4096));
}

Target resolve_target(const TargetOptions& options, Context& ctx) {
  Target target{load_pod(ctx.pod_request, ctx.env, ctx.processes), {}};
  const auto& all = target.pod.workers;
  for (int index : parse_worker_selection(options.workers, static_cast<int>(all.size()))) {
    target.workers.push_back(all[static_cast<size_t>(index)]);
  }
  return target;
}

std::unique_ptr<Transport> make_real_transport(const PodConfig& pod, int verbosity) {
  if (pod.local) return std::make_unique<LocalTransport>();
  SshTransportOptions options;
  options.ssh = pod.ssh;
  options.log_verbosity = verbosity > 1 ? verbosity - 1 : 0;
  if (const char* kex = std::getenv("TPURUN_SSH_KEX")) options.key_exchange = kex;
  return std::make_unique<SshTransport>(std::move(options));
}

}  // namespace tpurun::cli
