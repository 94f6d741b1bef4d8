#pragma once
// The first half of `up`: a READY TPU VM, zone after zone, through a queued
// resource (the default) or `tpu-vm create`. A zone that fails (FAILED,
// waiting past the limit, code 8/9/3) is cleaned up before the next one; what
// is left when `up` stops early is in ProvisionResult::made, for up.cpp.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "tpurun/cloud/gcloud_call.hpp"
#include "tpurun/pod/pod.hpp"
#include "tpurun/pod/tpu_node.hpp"

namespace tpurun {

struct ProvisionJob {
  std::string pod;
  GcloudSpec gcloud;  // name, project, internal_ip; the zone is each of create.zones
  CreateSpec create;
  std::map<std::string, std::string> labels;  // tpurun's own, beside create.labels
  std::string metadata_dir;                  // where create.metadata's values go as files
  std::chrono::seconds max_queued{0};        // 0: as long as it takes
  std::chrono::seconds ready_timeout{1800};
  std::chrono::seconds gcloud_timeout{600};
  std::chrono::milliseconds poll{2000};
  std::chrono::seconds heartbeat{300};        // a line this often while waiting, without a live status line
  std::chrono::seconds transient_limit{600};  // how long describes may fail with 429/5xx before up gives up
  std::chrono::milliseconds retry_first{2000};  // the first wait before trying again after one
  std::string first_zone;  // one of create.zones tried first ("" for their order): where an earlier up made one
};

// What this `up` created and has not deleted: a queued resource (its node goes with it) or a node.
struct Made {
  GcloudSpec where;
  bool queued = false;
  std::string state;  // the last state seen (a waiting queued resource may be kept with --keep)
};

struct ProvisionIo {
  const GcloudCalls& gcloud;
  const CancelToken& cancel;
  std::function<void(const std::string&)> say;     // a line
  std::function<void(const std::string&)> status;  // the live status line, redrawn in place
  bool live_status = false;                        // status is seen (a terminal): no heartbeat lines
  // Called before each create is sent: where it will be (so that after a
  // SIGKILL the next up, status and down look there first).
  std::function<void(const Made&)> creating = [](const Made&) {};
};

struct ProvisionResult {
  std::optional<TpuNode> node;  // READY, with workers
  GcloudSpec where;             // the zone it is in
  std::string queued_resource;  // short name, when one made it
  std::optional<Made> made;
  std::optional<Made> found;  // a queued resource waited on that this up did not make: never deleted by it
  std::string why;  // no node: why (every zone's reason, or the error)
  std::string fix;
  bool cancelled = false;
  std::chrono::steady_clock::time_point ready_at;  // when it was seen READY
};

ProvisionResult provision(const ProvisionJob& job, ProvisionIo& io);

// Deletes what `made` names (a queued resource with --force), ignoring "not
// found"; false (and `error`) when gcloud could not.
bool delete_made(const Made& made, const GcloudCalls& gcloud, std::chrono::seconds limit, std::string& error);

// "queued resource X in Z was made by this up and may be left: `gcloud ... delete ...` deletes it".
std::string left_behind_text(const Made& made);

// The gcloud commands `up` would run in one zone, for --dry-run.
std::vector<std::vector<std::string>> provision_commands(const ProvisionJob& job, const std::string& zone);

}  // namespace tpurun
