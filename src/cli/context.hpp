#pragma once
// Everything a subcommand needs from the outside world, injected so that
// run_x() can be called from tests without CLI11, a terminal or SSH.
#include <cstdio>
#include <functional>
#include <memory>

#include "tpurun/cancel.hpp"
#include "tpurun/config.hpp"
#include "tpurun/system.hpp"
#include "tpurun/transport.hpp"

namespace tpurun::cli {

struct Context {
  Context(Environment& e, ProcessRunner& p) : env(e), processes(p) {}
  Environment& env;
  ProcessRunner& processes;
  std::function<std::unique_ptr<Transport>(const PodConfig&)> make_transport;
  std::FILE* out = stdout;
  std::FILE* err = stderr;
  bool out_is_tty = false;
  bool err_is_tty = false;
  CancelToken cancel;
  int verbosity = 0;
  PodRequest pod_request;  // from the global --config / --pod flags
};

// The real transports: libssh for pods, local processes for the local "pod".
std::unique_ptr<Transport> make_real_transport(const PodConfig& pod, int verbosity);

}  // namespace tpurun::cli
