#pragma once
// tpurun up: the pod's TPU VM made from its "create" block (docs/cloud.md,
// "tpurun up"): provisioned zone after zone (cloud/provision), recorded
// where it was made (pod/placement), your key and its host keys put in place
// as gcloud does, the pod's setup run on every worker. What this `up` made
// is deleted again when it fails or is interrupted, unless `keep`.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/transport/outcome.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct UpJob {
  std::string pod;
  std::string user;
  GcloudSpec gcloud;
  CreateSpec create;
  std::string setup_script;  // the pod's "setup" (a local path); "" when none
  std::string state_dir;     // this user's: the setup's log and the metadata files go here
  std::string audit_path;
  int fanout = 64;
  std::chrono::seconds max_queued{0};  // create.max_queued, or --max-queued
  bool keep = false;                   // --keep: leave what was made when `up` stops early
  std::chrono::seconds ready_timeout{1800};
  std::chrono::seconds gcloud_timeout{600};
  std::chrono::seconds answer_timeout{300};  // for the workers to answer SSH once READY
  std::chrono::milliseconds poll{2000};
  std::string placed_zone;  // where an earlier up recorded its VM (a create it sent): tried first
  std::string down_intent_path;  // a `tpurun down` of the pod after this up began stops it (pod/down_intent)
};

struct UpIo {
  ProcessRunner& processes;
  Transport& transport;
  const Environment& env;
  const CancelToken& cancel;
  std::function<void(const std::string&)> say;
  std::function<void(const std::string&)> status;
  bool live_status = false;  // status lines are seen (a terminal); else a line every few minutes while waiting
};

struct UpResult {
  bool ok = false;
  bool cancelled = false;
  bool stopped_by_down = false;  // `tpurun down` of the pod asked meanwhile (why names it)
  std::string why;  // not ok: what failed, one line
  std::string fix;
  std::string left;  // what this up made and could not delete, with the command that deletes it
  std::optional<TpuNode> node;
  std::string zone;
  std::string queued_resource;
  std::vector<WorkerOutcome> setup;  // one per worker when a setup ran
  std::string setup_log;
  // Seconds: provisioning (create to READY), then `up`'s own part after
  // READY (keys, the workers answering), and the setup script's.
  double provision_s = 0, own_s = 0, setup_s = 0;
};

// `pod`'s job as its config says: its "gcloud" and "create" blocks, this
// user's state dir and audit log (with `env`). Throws UsageError, saying what
// to write, for a pod that lists its workers or has no "create" block.
UpJob up_job_for(const PodConfig& pod, const Environment& env);
// How the VM is paid for: "spot", "reserved", "guaranteed", "best-effort" or "on demand".
std::string create_tier(const CreateSpec& create);

// Stops as on Ctrl-C (what it made deleted, unless `keep`) when a `tpurun
// down` of the pod is asked after it began: stopped_by_down, and `why` names the down.
UpResult bring_up(const UpJob& job, UpIo& io);

// On a TPU VM that is READY already: keys, the workers answering, the setup
// (with `run_setup`); nothing is created or deleted.
UpResult prepare_ready_vm(const UpJob& job, const TpuNode& node, bool run_setup, UpIo& io);

// What `up --dry-run` prints: the gcloud commands, zone by zone, then the rest.
std::vector<std::string> up_plan(const UpJob& job);

// tpurun's labels on a VM it makes: who made it (`down` checks them).
std::map<std::string, std::string> up_labels(const std::string& user);
// The user a VM's labels say made it, "" when tpurun did not.
std::string made_by(const std::string& describe_json);

}  // namespace tpurun
