// A planned stage started as a run: the workers reserved and their TPUs
// judged (while the snapshot is built), the log dir and run record, the
// watcher, then the launch on every worker at once. Until the launch nothing
// has started anywhere, and Ctrl-C (or SIGTERM) gives everything up; from the
// launch on, every worker is launched and the stage detaches.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>

#include "runs/launch/reservation.hpp"
#include "runs/record/log_dir_layout.hpp"
#include "runs/stage/preflight.hpp"
#include "runs/stage/stage_push.hpp"
#include "runs/watcher/kept_env.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/runs/stage/job_env.hpp"
#include "tpurun/runs/stage/multislice_plan.hpp"
#include "tpurun/runs/stage/stage.hpp"
#include "tpurun/runs/watcher/watcher_control.hpp"
#include "tpurun/staging/adopt_pending.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/daemon.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/file_watch/file_watch.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/safe_dir.hpp"
#include "tpurun/util/text.hpp"
#include "tpurun/util/unique_fd.hpp"

namespace tpurun {
namespace {

StagedSnapshot snapshot(const StagePlan& plan, Context& ctx, LinePrinter& printer, const CancelToken& cancel,
                        std::function<bool()> publish_gate) {
  SnapshotRequest request;
  request.publish_gate = std::move(publish_gate);
  request.source_dir = plan.source_dir;
  request.staging_root = plan.target.pod.staging_root;
  request.user = plan.user;
  request.home_dir = ctx.env.get("HOME").value_or("");
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
  spdlog::debug("stage: snapshot {}", staged ? (staged->reused ? "reused" : "built") : "failed");
  if (!staged && ctx.cancel.cancelled()) throw Interrupted("interrupted while staging: " + staged.error().message);
  if (!staged) throw std::runtime_error("staging failed: " + staged.error().message);
  return *staged;
}

RunRecord make_record(const StagePlan& plan, const StagedSnapshot& staged, const std::string& run_id) {
  const StageRequest& r = plan.request;
  const auto now = std::chrono::system_clock::now();
  RunRecord record;
  record.run_id = run_id;
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
  record.gang = r.gang;
  return record;
}

// A worker where the job did not start is lost, as far as the gang goes: its
// log says why, and its exit record says 255 and why, so that the watcher
// and `runs` see it at once (not after --lost-after).
void record_not_started(const RunRecord& record, const WorkerOutcome& launch) {
  const std::string why = launch.error() ? launch.error()->message : "the job did not start";
  std::FILE* log = std::fopen(worker_log_path(record.log_dir, launch.worker.index).c_str(), "a");
  if (log) {
    fmt::print(log, "tpurun: the job did not start on {}: {}\n", launch.worker.display(), why);
    std::fclose(log);
  }
  write_file_atomic(job_file(record.log_dir, launch.worker.index, 1, "exit"), never_started_record(why));
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
  if (plan.request.gang.recreate && !pod.setup_script.empty()) {
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

// Reserves every selected worker and judges its TPU (unless
// --skip-preflight). With --wait, a pod that another stage or run holds, or
// whose TPU someone else holds, is waited for; anything else refuses at once.
std::unique_ptr<Reservations> reserve_workers(const StagePlan& plan, const std::string& run_id,
                                              Transport& transport, int wait_s, LinePrinter& printer, Context& ctx,
                                              const CancelToken& cancel) {
  const StageRequest& r = plan.request;
  const PodConfig& pod = plan.target.pod;
  ReserveSpec spec;
  spec.run_id = run_id;
  spec.scan = !r.skip_preflight;
  spec.required = !r.skip_preflight;
  spec.device_globs = pod.device_globs;
  spec.wait_s = wait_s;
  spec.fanout = r.fanout;
  const PreflightOptions checks{r.kill_previous, r.fanout, static_cast<int>(::getuid()), static_cast<int>(::getgid())};
  std::string told;  // what the last "waiting" note said
  // A run of the caller's that has just ended may keep its workers reserved
  // for a moment while its last processes exit (a stage right after `logs
  // -f` returned, or after a detached `-- true`): that is waited out briefly,
  // even without --wait, before it refuses.
  int settle = 6;  // x 0.5 s
  for (;;) {
    printer.progress(fmt::format("preflight: reserving {}", count_of(plan.target.workers.size(), "worker")));
    auto reservations = std::make_unique<Reservations>(plan.target.workers, transport, spec, cancel);
    printer.clear_progress();
    if (cancel.cancelled()) throw Interrupted(interrupted_by() + " while reserving the workers; nothing was started");
    if (r.skip_preflight) return reservations;
    try {
      judge_preflight(pod, *reservations, checks, printer, ctx);
      return reservations;
    } catch (const PreflightRefusal& e) {
      if (!r.wait_pod && e.own_runs_only() && settle-- > 0) {
        spdlog::debug("stage: a run of yours still holds a worker's reservation; reserving again in 0.5 s");
        reservations.reset();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        if (cancel.cancelled()) throw Interrupted(interrupted_by() + " while reserving the workers; nothing was started");
        continue;
      }
      if (!r.wait_pod || !e.busy()) throw;
      reservations.reset();  // nothing is held while waiting
      std::string what = e.what();
      what = what.substr(what.find('\n') + 1);
      what = what.substr(0, what.find('\n'));
      while (!what.empty() && what.front() == ' ') what.erase(0, 1);
      if (what != told) printer.note(fmt::format("waiting for the workers (--wait; Ctrl-C stops): {}", what));
      told = what;
      const auto until = std::chrono::steady_clock::now() + *r.wait_pod;
      while (std::chrono::steady_clock::now() < until) {
        printer.progress(fmt::format("waiting for the workers (--wait): {}", what));
        if (cancel.cancelled()) {
          printer.clear_progress();
          throw Interrupted(interrupted_by() + " while waiting for the workers; nothing was started");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
  }
}

// A stage given up after its log dir was made: the run says so, and never
// gets a watcher.
void record_cancelled(const RunRecord& record) {
  RunState state;
  state.verdict = RunVerdict::cancelled;
  state.message = "the stage was " + interrupted_by() + " before the launch: nothing was started";
  for (const Worker& w : record.workers) {
    state.workers.push_back(WorkerStatus{w.index, WorkerState::stopped, std::nullopt, std::nullopt, "never started"});
  }
  state.updated_at = format_utc_time(std::chrono::system_clock::now());
  write_run_state(record.log_dir, state);
}

}  // namespace

StagedRun start_run(const StagePlan& plan, Context& ctx, LinePrinter& printer) {
  const StageRequest& r = plan.request;
  const PodConfig& pod = plan.target.pod;
  // Roots on this host's own disk (no shared mount, or the local pod): made
  // here, private to the user, on the first stage.
  if (!pod.shared_mount || pod.local) {
    for (const std::string& dir : {pod.staging_root, pod.logs_root}) {
      const std::string top = std::filesystem::path(dir).parent_path().string();
      std::error_code ec;
      if (!std::filesystem::exists(top)) {
        std::filesystem::create_directories(top, ec);
        if (!ec) ::chmod(top.c_str(), 0700);
      }
      std::filesystem::create_directories(dir, ec);
      if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", dir, ec.message()));
    }
  }
  // A squatted logs dir stops the run before anything is snapshotted.
  if (auto logs = open_own_path(pod.logs_root, {plan.user}, Create::if_missing); !logs && logs.error().unsafe()) {
    throw UnsafeDirError(logs.error());
  }
  auto transport = ctx.make_transport(pod);
  const std::string run_id = make_run_id(std::chrono::system_clock::now(), random_suffix(), pod.name, r.tags);
  // Killed jobs' wrappers let their reservations go as they exit: a moment.
  int wait_s = 0;
  if (r.kill_previous) {
    const PreflightOptions checks{true, r.fanout, -1, -1};
    if (kill_previous(pod, plan.target.workers, *transport, checks, printer, ctx) > 0) wait_s = 10;
  }
  // The snapshot is built while the workers are reserved (both wait on I/O:
  // the shared mount, SSH), and is published only if every worker was. A
  // refusal also cancels the build, so it is reported without waiting for it.
  std::promise<bool> reserved;
  std::shared_future<bool> gate = reserved.get_future().share();
  std::atomic<bool> refused{false};
  const CancelToken building_cancel = ctx.cancel.or_when(&refused);
  auto building = std::async(std::launch::async, [&plan, &ctx, &printer, &building_cancel, gate] {
    return snapshot(plan, ctx, printer, building_cancel, [gate] { return gate.get(); });
  });
  std::unique_ptr<Reservations> reservations;
  try {
    reservations = reserve_workers(plan, run_id, *transport, wait_s, printer, ctx, ctx.cancel);
  } catch (...) {
    refused = true;
    reserved.set_value(false);
    try {
      building.get();  // discarded: the refusal is the news
    } catch (const std::exception&) {
    }
    throw;
  }
  reserved.set_value(true);
  spdlog::debug("stage: {} reserved", count_of(plan.target.workers.size(), "worker"));
  StagedRun run;
  run.staged = building.get();  // an interrupt here gives the reservations up
  // Pinned from here until the stage is done: `tpurun gc` keeps it meanwhile,
  // however old (a reused snapshot) and whatever its cutoff.
  run.pin = SnapshotPin(run.staged.dir);
  if (run.pin.gone()) {
    throw std::runtime_error(fmt::format("snapshot {} was removed (tpurun gc?) before the launch; nothing was "
                                         "started: stage again",
                                         run.staged.name));
  }
  if (run.staged.reused) {
    printer.note(fmt::format("unchanged since snapshot {}: reusing it ({} files, {}; nothing written) → {}",
                             run.staged.name, run.staged.files, human_size(run.staged.bytes), run.staged.dir));
  } else {
    printer.note(fmt::format("staged {} files ({}, {} reused) → {}", run.staged.files, human_size(run.staged.bytes),
                             human_size(run.staged.bytes_reused), run.staged.dir));
  }
  // What was left out and why (a submodule, a special file, a home dir's secrets, cache trouble).
  for (const std::string& note : run.staged.notes) printer.note(note);
  if (ctx.cancel.cancelled()) throw Interrupted(interrupted_by() + " before the launch; nothing was started");
  PushedRun pushed;  // no shared mount: the workers' own copies
  if (!pod.shared_mount) {
    spdlog::debug("stage: snapshot ready, pushing it");
    pushed = push_to_workers(plan, run.staged, run_id, *reservations, printer, ctx.cancel);
    spdlog::debug("stage: every worker holds the snapshot");
  }

  run.record = make_record(plan, run.staged, run_id);
  run.record.worker_staged_dir = pushed.staged_dir;
  run.record.worker_log_dir = pushed.log_dir;
  write_run_record(run.record, run.staged.git.diff);
  keep_for_recreate(plan, run.record);
  if (r.gang.recreate && pod.setup_script.empty()) {
    printer.note(fmt::format("--recreate: pod '{}' has no \"setup\" script, so a recreated TPU VM gets only what "
                             "its image and metadata give it (no packages, no shared mount); see docs/runs.md",
                             pod.name));
  }
  if (!r.env.empty() && (r.gang.restarts > 0 || r.gang.recreate)) {
    save_kept_env(kept_env_dir(ctx.env), run.record.run_id, r.env);
  }
  printer.note(fmt::format("run {} → {}", run.record.run_id, run.record.log_dir));
  if (ctx.cancel.cancelled()) {
    record_cancelled(run.record);
    throw Interrupted(fmt::format("{} before the launch; nothing was started, and run {} is recorded as cancelled",
                                  interrupted_by(), run.record.run_id));
  }

  // The watcher starts first, so the gang rules hold even if this client is
  // killed while launching. From here on the launch goes through: the
  // workers are launched together, and Ctrl-C only detaches afterwards.
  int launching[2];
  if (::pipe2(launching, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  UniqueFd launching_read(launching[0]), launching_write(launching[1]);
  run.watcher_pid = start_watcher(run.record, ctx, launching_read.get());
  launching_read.reset();
  spdlog::debug("stage: run record written, watcher started; launching");
  LaunchSpec spec{run.record.run_id, workers_log_dir(run.record), workers_staged_dir(run.record), r.argv, r.env,
                  static_cast<int>(pod.workers.size()), 1, 1 + r.gang.restarts, plan.slices};
  run.launched = reservations->launch(spec);
  launching_write.reset();  // the watcher connects now
  spdlog::debug("stage: launch answered");
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
