#include "tpurun/runs/stage/stage.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <atomic>
#include <filesystem>
#include <functional>
#include <future>

#include "runs/record/log_dir_layout.hpp"
#include "runs/recreate/recreate.hpp"
#include "runs/stage/preflight.hpp"
#include "runs/watcher/kept_env.hpp"
#include "tpurun/board/claim_check.hpp"
#include "tpurun/board/pod_pick.hpp"
#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/stage/job_env.hpp"
#include "tpurun/runs/stage/multislice_plan.hpp"
#include "tpurun/runs/watcher/watcher_control.hpp"
#include "tpurun/staging/adopt_pending.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/daemon.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/file_watch/file_watch.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/safe_dir.hpp"

namespace tpurun {
namespace {

void require_roots(const PodConfig& pod) {
  if (pod.staging_root.empty() || pod.logs_root.empty()) {
    throw UsageError(fmt::format("pod '{}' has no staging_root and logs_root, and no local_root either; see "
                                 "docs/config.md", pod.name));
  }
}

// --recreate needs a TPU VM that tpurun describes and can create again as it was.
void check_recreate(const PodConfig& pod) {
  const std::string head = fmt::format("--recreate: pod '{}'", pod.name);
  if (!pod.slices.empty()) {
    throw UsageError(head + " is a multi-slice pod; tpurun recreates the TPU VM of a single gcloud pod only "
                            "(see docs/runs.md)");
  }
  if (!pod.gcloud) {
    throw UsageError(head + " lists its workers (\"workers\"), so tpurun does not know a TPU VM to create "
                            "again: only a gcloud pod (\"gcloud\": {\"name\", \"zone\"}) can be recreated "
                            "(see docs/runs.md)");
  }
  try {
    if (auto why = why_not_recreatable(read_tpu_vm_shape(pod.describe_json))) {
      throw UsageError(fmt::format("{}: tpurun cannot recreate TPU VM {}: {}", head, pod.gcloud->name, *why));
    }
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: cannot read what gcloud said about TPU VM {}: {}", head, pod.gcloud->name,
                                 e.what()));
  }
  if (!pod.setup_script.empty() && ::access(pod.setup_script.c_str(), R_OK) != 0) {
    throw UsageError(fmt::format("{}: its \"setup\" script {} cannot be read: {}", head, pod.setup_script,
                                 std::strerror(errno)));
  }
}

}  // namespace

std::vector<std::vector<std::string>> planned_recreate(const StagePlan& plan, const std::string& log_dir) {
  if (!plan.request.gang.recreate || !plan.target.pod.gcloud) return {};
  return recreate_commands(*plan.target.pod.gcloud, plan.target.pod.describe_json, log_dir);
}

StagePlan plan_stage(StageRequest request, Context& ctx) {
  pick_pod(ctx, request.ignore_claim, request.wait_pod, true);  // --pod auto / --pod 'glob*' [--wait]
  StagePlan plan;
  plan.target = select_workers(load_pod(ctx.pod_request, ctx.env, ctx.processes), request.workers);
  require_roots(plan.target.pod);
  check_tags(request.tags, plan.target.pod.name);
  respect_claims(plan.target.pod, request.ignore_claim, ctx);
  plan.slices = plan_multislice(plan.target, request.megascale_port, request.env);
  if (request.gang.recreate) check_recreate(plan.target.pod);
  plan.user = local_user(ctx.env);
  plan.source_dir = std::filesystem::current_path().string();
  plan.project = project_name(plan.source_dir);
  plan.request = std::move(request);
  return plan;
}

}  // namespace tpurun
