// The safety rules of a recreate and its audit line: pure, unit-tested.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "runs/recreate/recreate_rules.hpp"

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/pod/queued_resource.hpp"
#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {

std::vector<std::string> gcloud_keys_argv(const GcloudSpec& spec) {
  auto argv = gcloud_import_argv(spec, "all");
  argv.insert(argv.end() - 1, "--quiet");
  return argv;
}

std::vector<std::vector<std::string>> recreate_commands(const GcloudSpec& spec, const std::string& describe_json,
                                                        const std::string& log_dir) {
  const TpuVmShape shape = read_tpu_vm_shape(describe_json);
  if (!shape.queued_resource.empty()) {  // through its queued resource: deleted with its node, created again
    return {gcloud_qr_delete_argv(queued_resource_spec(spec, shape), true),
            gcloud_qr_create_argv(spec, shape, queued_options_of(shape), metadata_dir(log_dir)), gcloud_keys_argv(spec)};
  }
  return {gcloud_delete_argv(spec), gcloud_create_argv(spec, shape, metadata_dir(log_dir)), gcloud_keys_argv(spec)};
}

std::optional<std::string> recreate_refusal(const RecreateFacts& f) {
  const bool gone = f.state == "NOT_FOUND";
  if (!gone && f.state != "PREEMPTED" && f.state != "TERMINATED") {
    return fmt::format("TPU VM {} is {} now, not PREEMPTED or TERMINATED: tpurun deletes nothing else",
                       f.pod_tpu, f.state.empty() ? "in an unknown state" : f.state);
  }
  if (!gone && f.name != f.pod_tpu) {
    return fmt::format("describe answered for TPU VM '{}', not the pod's '{}'", f.name, f.pod_tpu);
  }
  if (!gone && f.id != f.recorded_id) {
    return fmt::format("TPU VM {} has id {}, not {} that this run was on: someone else made it, so tpurun "
                       "leaves it alone",
                       f.pod_tpu, f.id.empty() ? "(none)" : f.id, f.recorded_id.empty() ? "(none)" : f.recorded_id);
  }
  if (!f.run_active) return std::string("the run was stopped (tpurun kill --run)");
  if (f.claimed_by) return fmt::format("the pod is claimed by {}", *f.claimed_by);
  if (!f.foreign_tpu_users.empty()) {
    return fmt::format("another user holds a TPU on the pod's workers: {}", fmt::join(f.foreign_tpu_users, "; "));
  }
  if (f.not_recreatable) return fmt::format("TPU VM {} cannot be created again by tpurun: {}", f.pod_tpu,
                                            *f.not_recreatable);
  return std::nullopt;
}

std::string recreate_audit_entry(std::time_t when, const std::string& event, const std::string& user,
                                 const std::string& pod, const GcloudSpec& spec, const std::string& node_id,
                                 const std::string& run_id, const std::vector<std::string>& argv) {
  const std::string stamp = format_utc_time(std::chrono::system_clock::from_time_t(when));
  nlohmann::ordered_json entry{{"time", stamp},          {"event", event},    {"caller", user},
                               {"pod", pod},             {"tpu", spec.name},  {"zone", spec.zone},
                               {"project", spec.project}, {"node_id", node_id}, {"run_id", run_id},
                               {"command", argv}};
  return entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace tpurun
