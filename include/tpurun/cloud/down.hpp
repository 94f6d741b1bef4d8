#pragma once
// tpurun down: a pod's TPU VM and its queued resource deleted, after the
// safety rules (docs/cloud.md, "tpurun down"): never while another user
// claims the pod or holds a TPU on it, never a VM that tpurun did not make
// for this user; --force overrides both. `stage --down` does the same when
// its run has ended.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/pod/queued_resource.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct DownJob {
  std::string pod;
  std::string user;
  GcloudSpec gcloud;  // in the zone `up` made it (placement applied)
  std::string logs_root;  // the pod's board (claims); "" when none
  std::vector<std::string> device_globs;
  std::string audit_path;
  int fanout = 64;
  bool force = false;
  std::chrono::seconds gcloud_timeout{600};
};

// What the rules look at, gathered just before anything is deleted.
struct DownFacts {
  TpuNode node;        // state NOT_FOUND when gone
  QueuedResource qr;   // state NOT_FOUND when none
  std::string made_by;  // the tpurun-user label on the VM (or the queued resource's node); "" when tpurun did not make it
  std::optional<std::string> claimed_by;       // another user's live claim, described
  std::vector<std::string> foreign_tpu_users;  // "w1 (bob pid 42)"
  std::string describe_error;                  // gcloud could not say (nothing is deleted then)
};

struct DownIo {
  ProcessRunner& processes;
  Transport& transport;
  const CancelToken& cancel;
  std::function<void(const std::string&)> say;
};

// `pod`'s job (its "gcloud" block, board and device globs; this user's
// audit log, with `env`). The pod is a gcloud pod.
DownJob down_job_for(const PodConfig& pod, const Environment& env, bool force);
DownFacts gather_down_facts(const DownJob& job, DownIo& io);
// The same, and when nothing is where `job` looks (not where this user's `up`
// recorded it, or another user's `up` made it): the first of the other
// `zones` (the pod's "create" zones) where something is, `job` moved there.
DownFacts find_down_facts(DownJob& job, const std::vector<std::string>& zones, DownIo& io);
// "TPU VM x in ZONE: READY; queued resource q: ACTIVE (made by tpurun for alice)"
std::string down_facts_text(const DownFacts& facts, const GcloudSpec& gcloud);

// Why nothing may be deleted, or nullopt: see the header comment. `force`
// skips the claim, the TPU users and the maker; never an unknown state.
std::optional<std::string> down_refusal(const DownFacts& facts, const std::string& user, bool force);

// The gcloud commands: the queued resource's delete --force (its node goes
// with it), or the VM's delete when no queued resource made it.
std::vector<std::vector<std::string>> down_commands(const DownFacts& facts, const GcloudSpec& gcloud);

// Deletes (each command audited first), then describes again: "" when both are gone, else why not.
std::string tear_down(const DownJob& job, const DownFacts& facts, DownIo& io);

// True when there is nothing to delete.
bool nothing_left(const DownFacts& facts);

}  // namespace tpurun
