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
#include "tpurun/board/claim_check.hpp"
#include "tpurun/board/pod_pick.hpp"
#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/stage/job_env.hpp"
#include "tpurun/runs/stage/multislice_plan.hpp"
#include "tpurun/runs/watcher/kept_env.hpp"
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
    throw UsageError(fmt::format("pod '{}' needs staging_root and logs_root (directories on the shared NFS mount "
                                 "that every worker sees); see docs/config.md", pod.name));
  }
}

StagedSnapshot snapshot(const StagePlan& plan, Context& ctx, LinePrinter& printer, const CancelToken& cancel,
                        std::function<bool()> publish_gate) {
  SnapshotRequest request;
  request.publish_gate = std::move(publish_gate);
  request.source_dir = plan.source_dir;
  request.staging_root = plan.target.pod.staging_root;
  request.user = plan.user;
  request.size_limit = plan.target.pod.stage_size_limit;
  request.stat_cache_dir = cache_dir(ctx.env) + "/stat-cache";
  // On NFS each link into the object store costs round trips on the way to
  // the launch; there the links are made after it (staging/adoption.hpp).
  if (on_network_filesystem(request.staging_root)) request.adopt_dir = pending_adoptions_dir(ctx.env);
  request.now = std::chrono::system_clock::now();
  request.random_suffix = random_suffix;
  auto staged = create_snapshot(request, ctx.processes, cancel, [&](const SnapshotProgress& p) {
    printer.progress(fmt::format("staging: {}/{} files, {} of {}, {} reused", p.files_done, p.files_total,
                                 human_size(p.bytes_done), human_size(p.bytes_total), human_size(p.bytes_reused)));
  });
  printer.clear_progress();
  if (!staged && ctx.cancel.cancelled()) throw Interrupted("interrupted while staging: " + staged.error().message);
  if (!staged) throw std::runtime_error("staging failed: " + staged.error().message);
  return *staged;
}

RunRecord make_record(const StagePlan& plan, const StagedSnapshot& staged) {
  const StageRequest& r = plan.request;
  const auto now = std::chrono::system_clock::now();
  RunRecord record;
  record.run_id = make_run_id(now, random_suffix(), plan.target.pod.name, r.tags);
  record.log_dir = create_log_dir(plan.target.pod.logs_root, plan.user, plan.project, record.run_id);
  record.user = plan.user;
  record.pod = plan.target.pod.name;
  record.project = plan.project;
  record.workers = plan.target.workers;
  if (plan.slices) record.slices = slice_pods(plan.target.pod);
  record.megascale = plan.slices;
  record.command = r.argv;
  record.env_names = env_names(r.env);  // never the values: run.json is readable by others
  record.tags = r.tags;
  record.staged_dir = staged.dir;
  record.git_sha = staged.git.sha;
  record.git_branch = staged.git.branch;
  record.git_dirty = staged.git.dirty;
  record.tree_hash = staged.tree_hash;
  record.created_at = format_utc_time(now);
  record.on_failure = r.on_failure;
  record.restarts = r.restarts;
  record.lost_after_ms = r.lost_after_ms;
  record.grace_ms = r.grace_ms;
  record.restart_on_exit_codes = r.restart_on_exit_codes;
  record.recreate = r.recreate;
  record.max_preemptions = r.max_preemptions;
  record.stall_after_ms = r.stall_after_ms;
  record.on_stall = r.on_stall;
  return record;
}

// A worker where the job did not start has failed, as far as the gang goes:
// its log says why and its exit record says 255, so the watcher and `runs`
// see it like any other failure.
void record_not_started(const RunRecord& record, const WorkerOutcome& launch) {
  const std::string why = launch.error() ? launch.error()->message : "the job did not start";
  std::FILE* log = std::fopen(worker_log_path(record.log_dir, launch.worker.index).c_str(), "a");
  if (log) {
    fmt::print(log, "tpurun: the job did not start on {}: {}\n", launch.worker.display(), why);
    std::fclose(log);
  }
  write_file_atomic(job_file(record.log_dir, launch.worker.index, 1, "exit"), "255\n");
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

// What a recreate needs later, kept in the log dir: describe's answer (in a
// 0700 dir: the VM's metadata may hold secrets) and the pod's setup script.
void keep_for_recreate(const StagePlan& plan, const RunRecord& record) {
  const PodConfig& pod = plan.target.pod;
  if (!pod.gcloud || pod.describe_json.empty()) return;
  if (::mkdir(tpu_vm_dir(record.log_dir).c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error(fmt::format("cannot create {}: {}", tpu_vm_dir(record.log_dir), std::strerror(errno)));
  }
  write_file_atomic(recorded_tpu_vm_path(record.log_dir), pod.describe_json);
  if (plan.request.recreate && !pod.setup_script.empty()) {
    write_file_atomic(recorded_setup_path(record.log_dir), read_small_file(pod.setup_script));
  }
}

// The files the snapshot left out of the object store are linked in by a
// detached `tpurun _adopt`, once the launch no longer waits on the mount.
void start_adopter(Context& ctx, LinePrinter& printer) {
  const std::string dir = pending_adoptions_dir(ctx.env);
  auto pid = spawn_detached_self({"_adopt"}, dir + "/adopt.log");
  if (!pid) {
    printer.note(fmt::format("cannot start tpurun _adopt ({}): the new files join the object store at the next "
                             "stage", pid.error()));
  }
}

}  // namespace

std::vector<std::vector<std::string>> planned_recreate(const StagePlan& plan, const std::string& log_dir) {
  if (!plan.request.recreate || !plan.target.pod.gcloud) return {};
  return recreate_commands(*plan.target.pod.gcloud, plan.target.pod.describe_json, log_dir);
}

StagePlan plan_stage(StageRequest request, Context& ctx) {
  pick_pod(ctx, request.ignore_claim, request.wait_pod);  // --pod auto / --pod 'glob*' [--wait]
  StagePlan plan;
  plan.target = select_workers(load_pod(ctx.pod_request, ctx.env, ctx.processes), request.workers);
  require_roots(plan.target.pod);
  respect_claims(plan.target.pod, request.ignore_claim, ctx);
  plan.slices = plan_multislice(plan.target, request.megascale_port, request.env);
  if (request.recreate) check_recreate(plan.target.pod);
  plan.user = local_user(ctx.env);
  plan.source_dir = std::filesystem::current_path().string();
  plan.project = project_name(plan.source_dir);
  plan.request = std::move(request);
  return plan;
}

StagedRun carry_out(const StagePlan& plan, Context& ctx, LinePrinter& printer) {
  const StageRequest& r = plan.request;
  const PodConfig& pod = plan.target.pod;
  // A squatted logs dir stops the run before anything is snapshotted.
  if (auto logs = open_own_path(pod.logs_root, {plan.user}, Create::if_missing); !logs && logs.error().unsafe()) {
    throw UnsafeDirError(logs.error());
  }
  auto transport = ctx.make_transport(pod);
  // The snapshot is built while the preflight asks the workers (both wait on
  // I/O: the shared mount, SSH), and is published only if the preflight passed.
  // A refusal also cancels the build, so it is reported without waiting for it.
  std::promise<bool> preflight_passed;
  std::shared_future<bool> gate = preflight_passed.get_future().share();
  std::atomic<bool> refused{false};
  const CancelToken building_cancel = ctx.cancel.or_when(&refused);
  auto building = std::async(std::launch::async, [&plan, &ctx, &printer, &building_cancel, gate] {
    return snapshot(plan, ctx, printer, building_cancel, [gate] { return gate.get(); });
  });
  try {
    if (!r.skip_preflight) {
      PreflightOptions checks{r.kill_previous, r.fanout, static_cast<int>(::getuid()), static_cast<int>(::getgid())};
      run_preflight(pod, plan.target.workers, *transport, checks, printer, ctx);
    }
  } catch (...) {
    refused = true;
    preflight_passed.set_value(false);
    try {
      building.get();  // discarded: the preflight's verdict is the news
    } catch (const std::exception&) {
    }
    throw;
  }
  preflight_passed.set_value(true);
  StagedRun run;
  run.staged = building.get();
  if (run.staged.reused) {
    printer.note(fmt::format("unchanged since snapshot {}: reusing it ({} files, {}; nothing written) → {}",
                             run.staged.name, run.staged.files, human_size(run.staged.bytes), run.staged.dir));
  } else {
    printer.note(fmt::format("staged {} files ({}, {} reused) → {}", run.staged.files, human_size(run.staged.bytes),
                             human_size(run.staged.bytes_reused), run.staged.dir));
  }

  run.record = make_record(plan, run.staged);
  write_run_record(run.record, run.staged.git.diff);
  keep_for_recreate(plan, run.record);
  if (r.recreate && pod.setup_script.empty()) {
    printer.note(fmt::format("--recreate: pod '{}' has no \"setup\" script, so a recreated TPU VM gets only what "
                             "its image and metadata give it (no packages, no shared mount); see docs/runs.md",
                             pod.name));
  }
  if (!r.env.empty() && (r.restarts > 0 || r.recreate)) save_kept_env(kept_env_dir(ctx.env), run.record.run_id, r.env);
  printer.note(fmt::format("run {} → {}", run.record.run_id, run.record.log_dir));

  // The watcher starts first, so the gang rules hold even if this client is
  // killed while launching.
  run.watcher_pid = start_watcher(run.record, ctx);
  LaunchSpec spec{run.record.run_id, run.record.log_dir, run.staged.dir, r.argv, r.env,
                  static_cast<int>(pod.workers.size()), 1, 1 + r.restarts, plan.slices};
  run.launched = launch_on_workers(spec, plan.target.workers, *transport, r.fanout, ctx.cancel);
  for (const WorkerOutcome& launch : run.launched.outcomes) {
    if (run.launched.pids.count(launch.worker.index)) {
      run.running.push_back(launch.worker);
    } else {
      record_not_started(run.record, launch);
    }
  }
  if (run.staged.adoption_pending) start_adopter(ctx, printer);
  return run;
}

}  // namespace tpurun
