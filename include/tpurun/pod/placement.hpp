#pragma once
// Where `tpurun up` made a pod's TPU VM: the zone it found capacity in (one of
// "create.zones", not always gcloud.zone) and the queued resource that made
// it, kept per user in $XDG_STATE_HOME/tpurun/placements/ (default
// ~/.local/state), so that every later command describes it there.
#include <optional>
#include <string>

#include "tpurun/pod/pod.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct Placement {
  std::string zone;
  std::string queued_resource;  // short name; "" when made by `tpu-vm create`
  std::string made_at;          // "2026-01-02T03:04:05Z"
};

std::string placement_path(const GcloudSpec& spec, const Environment& env);
// nullopt when none is kept (or it is unreadable: the config's zone then stands).
std::optional<Placement> read_placement(const GcloudSpec& spec, const Environment& env);
// Throws std::runtime_error when it cannot be written.
void keep_placement(const GcloudSpec& spec, const Placement& placement, const Environment& env);
void forget_placement(const GcloudSpec& spec, const Environment& env);

// The pod's TPU VM where `up` made it: its zone replaced by the kept one.
void apply_placement(PodConfig& pod, const Environment& env);

}  // namespace tpurun
