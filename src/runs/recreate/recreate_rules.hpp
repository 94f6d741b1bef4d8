#pragma once
// The safety rules of a recreate, the gcloud commands it runs, and its audit
// line: pure, so that each rule is unit-tested on its own (recreate.hpp does
// the recreate itself).
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"

namespace tpurun {

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

}  // namespace tpurun
