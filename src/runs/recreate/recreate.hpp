#pragma once
// stage --recreate: the run's watcher found its TPU VM PREEMPTED, TERMINATED
// or deleted. It deletes the VM and creates it again as describe recorded it
// when the run started (<log dir>/tpu-vm/describe.json), waits for READY, has gcloud
// push the user's key and record the new host keys, and runs the pod's setup
// (<log dir>/setup.sh) on every worker. The watcher then relaunches the
// run from the same snapshot. See docs/runs.md, "Recreating a preempted TPU VM".
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runs/recreate/recreate_rules.hpp"
#include "tpurun/pod/pod.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct RecreateJob {
  std::string run_id;
  std::string log_dir;
  std::string user;
  std::string pod;        // the config pod (claims are on it)
  std::string logs_root;  // where its board is
  GcloudSpec spec;
  std::string recorded_id;
  std::vector<Worker> workers;  // where the run's workers were (scanned for other users' TPU use)
  std::vector<std::string> device_globs;
  std::string audit_path;
  int fanout = 64;
  std::chrono::seconds ready_timeout{1800};  // how long a create may take to be READY
  std::chrono::seconds gcloud_timeout{600};  // a delete, and gcloud's key push
  std::chrono::milliseconds poll{2000};      // describe while waiting
};

struct RecreateResult {
  bool ok = false;
  std::string why;          // when not ok: what refused or failed, one line
  bool deleted = false;     // something was deleted (or it was gone already)
  std::optional<TpuNode> node;  // the new VM, READY
  // Not ok because the new VM was found PREEMPTED, TERMINATED or gone before
  // the run could go on there (during its key push or setup): what describe said.
  std::optional<TpuNode> preempted_again;
  double api_s = 0, keys_s = 0, setup_s = 0;
};

// What a recreate does to the outside world, and how it reports.
struct RecreateIo {
  ProcessRunner& processes;  // gcloud
  Transport& transport;      // the workers: the scan before, the setup after
  const CancelToken& cancel;
  std::function<void(const std::string&)> say;  // one line for watcher.log
  // The run was stopped meanwhile (kill --run, down): the recreate stops, and
  // deletes what it created.
  std::function<bool()> stopped;
};

// `gone` is the describe that found the VM gone (its state, name and id).
RecreateResult recreate_tpu_vm(const RecreateJob& job, const TpuNode& gone, RecreateIo& io);

}  // namespace tpurun
