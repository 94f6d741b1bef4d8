#pragma once
// Everything a command needs from the outside world, injected so that the
// CLI's run_x() and the rooms it calls into can be tested without CLI11, a
// terminal or SSH. Built once in cli/app.cpp.
#include <cstdio>
#include <functional>
#include <memory>

#include "tpurun/pod/config.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

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

}  // namespace tpurun
