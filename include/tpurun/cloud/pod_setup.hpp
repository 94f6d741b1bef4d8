#pragma once
// The pod's setup script ("setup" in its config) on every worker of a new
// TPU VM, as `bash -s` with the script on stdin: what `up` and a recreate
// run before the pod is used. Each worker's output is kept in a log file,
// and each worker gets one summary line.
#include <string>
#include <vector>

#include "tpurun/pod/worker.hpp"
#include "tpurun/transport/outcome.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"

namespace tpurun {

struct PodSetup {
  std::string script;    // the script's text
  std::string log_path;  // appended to: "[w0 10.0.0.2] line", then "[w0 ...] exit 0"
  std::string title;     // the log's header line for this setup ("setup of TPU VM x (id y)")
  int fanout = 64;
};

std::vector<WorkerOutcome> run_pod_setup(const PodSetup& setup, const std::vector<Worker>& workers,
                                         Transport& transport, const CancelToken& cancel);

// "w0 10.0.0.2: ok in 3.1s" or "w1 10.0.0.3: exit 1 in 0.4s: <its last line>".
std::string setup_summary_line(const WorkerOutcome& outcome);

}  // namespace tpurun
