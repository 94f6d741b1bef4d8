#pragma once
// stage --recreate: the run's watcher found its TPU VM PREEMPTED, TERMINATED
// or deleted. It deletes the VM and creates it again as describe recorded it
// when the run started (<log dir>/tpu-vm/describe.json), waits for READY, has gcloud
// push the user's key and record the new host keys, and runs the pod's setup
// (<log dir>/setup.sh) on every worker. The supervisor then relaunches the
// run from the same snapshot. See docs/runs.md, "Recreating a preempted TPU VM".
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/cancel.hpp"
#include "tpurun/pod.hpp"
#include "tpurun/system.hpp"
#include "tpurun/tpu_node.hpp"
#include "tpurun/transport.hpp"

namespace tpurun {

// Files of a run's log dir that a recreate uses. tpu-vm/ is 0700: the
// metadata may hold secrets (a startup-script's tokens), and the log dir is
// readable by others.
std::string tpu_vm_dir(const std::string& log_dir);
std::string recorded_tpu_vm_path(const std::string& log_dir);  // tpu-vm/describe.json: describe's answer
std::string recorded_setup_path(const std::string& log_dir);    // the pod's setup script, copied at stage time
std::string setup_log_path(const std::string& log_dir);         // its output, every worker, every recreate
std::string metadata_dir(const std::string& log_dir);           // tpu-vm/metadata/KEY: the VM's metadata

// gcloud tpu-vm ssh NAME ... --worker=all --quiet --command=true: gcloud's own
// first-use step (your key into the VM's metadata, the new host keys into
// ~/.ssh/google_compute_known_hosts), with no passphrase prompt.
std::vector<std::string> gcloud_keys_argv(const GcloudSpec& spec);

// The gcloud commands of a recreate, in order: delete, create, keys. Throws
// std::runtime_error when the recorded describe is unreadable.
std::vector<std::vector<std::string>> recreate_commands(const GcloudSpec& spec, const std::string& describe_json,
                                                        const std::string& log_dir);

// What the safety rules look at, gathered just before anything is deleted.
struct RecreateFacts {
  std::string state;                           // describe's now: PREEMPTED, TERMINATED, NOT_FOUND, ...
  std::string name;                            // describe's (short) name; "" when NOT_FOUND
  std::string id;                              // describe's id; "" when NOT_FOUND
  std::string pod_tpu;                         // the pod's TPU VM name (gcloud.name)
  std::string recorded_id;                     // the VM this run is on (after a recreate: the new one)
  bool run_active = true;                      // no stop marker, no final verdict
  std::optional<std::string> claimed_by;       // another user's live claim on the pod, described
  std::vector<std::string> foreign_tpu_users;  // "w1 (bob pid 42 python3 train.py)" on reachable workers
  std::optional<std::string> not_recreatable;  // why_not_recreatable() of the recorded shape
};

// Why nothing may be deleted or created, or nullopt when the recreate may go on:
//  - the VM is PREEMPTED, TERMINATED or gone, never in any other state;
//  - it is this pod's VM and the one this run is on (its id is the recorded one);
//  - the run is still active (`tpurun kill --run` stops a recreate);
//  - nobody else has claimed the pod or uses a TPU on a worker still reachable;
//  - the recorded shape can be created again (no queued resource).
std::optional<std::string> recreate_refusal(const RecreateFacts& facts);

// One line of the user's audit log for a delete or a create of a TPU VM.
std::string recreate_audit_entry(std::time_t when, const std::string& event, const std::string& user,
                                 const std::string& pod, const GcloudSpec& spec, const std::string& node_id,
                                 const std::string& run_id, const std::vector<std::string>& argv);

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
  double api_s = 0, keys_s = 0, setup_s = 0;
};

// What a recreate does to the outside world, and how it reports.
struct RecreateIo {
  ProcessRunner& processes;  // gcloud
  Transport& transport;      // the workers: the scan before, the setup after
  const CancelToken& cancel;
  std::function<void(const std::string&)> say;  // one line for supervisor.log
  std::function<bool()> stopped;                // the run was stopped meanwhile
};

// `gone` is the describe that found the VM gone (its state, name and id).
RecreateResult recreate_tpu_vm(const RecreateJob& job, const TpuNode& gone, RecreateIo& io);

}  // namespace tpurun
