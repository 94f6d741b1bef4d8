// tpurun stage: snapshot the code onto the shared mount, create the run's log
// dir, launch the command detached on every worker, and follow it.
#include "cli/stage.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>

#include "cli/claim_check.hpp"
#include "cli/identity.hpp"
#include "cli/pod_pick.hpp"
#include "cli/preflight.hpp"
#include "cli/report.hpp"
#include "cli/run_follow.hpp"
#include "cli/stage_slices.hpp"
#include "tpurun/duration.hpp"
#include "tpurun/fanout.hpp"
#include "tpurun/launch.hpp"
#include "tpurun/atomic_file.hpp"
#include "tpurun/run_env.hpp"
#include "tpurun/run_state.hpp"
#include "tpurun/safe_dir.hpp"
#include "tpurun/run_record.hpp"
#include "tpurun/staging.hpp"
#include "tpurun/worker_select.hpp"

namespace tpurun::cli {
namespace {

struct GangFlags {
  long long lost_after_ms = 60000;
  long long grace_ms = 10000;
};

void require_roots(const PodConfig& pod) {
  if (pod.staging_root.empty() || pod.logs_root.empty()) {
    throw UsageError(fmt::format("pod '{}' needs staging_root and logs_root (directories on the shared NFS mount "
                                 "that every worker sees); see docs/config.md", pod.name));
  }
}

StagedSnapshot snapshot(const Target& target, const std::string& user, Context& ctx, LinePrinter& printer) {
  SnapshotRequest request;
  request.source_dir = std::filesystem::current_path();
  request.staging_root = target.pod.staging_root;
  request.user = user;
  request.size_limit = target.pod.stage_size_limit;
  request.stat_cache_dir = cache_dir(ctx.env) + "/stat-cache";
  request.now = std::chrono::system_clock::now();
  request.random_suffix = random_suffix;
  auto staged = create_snapshot(request, ctx.processes, ctx.cancel, [&](const SnapshotProgress& p) {
    printer.progress(fmt::format("staging: {}/{} files, {} of {}, {} reused", p.files_done, p.files_total,
                                 human_size(p.bytes_done), human_size(p.bytes_total), human_size(p.bytes_reused)));
  });
  printer.clear_progress();
  if (!staged && ctx.cancel.cancelled()) throw Interrupted("interrupted while staging: " + staged.error().message);
  if (!staged) throw std::runtime_error("staging failed: " + staged.error().message);
  return *staged;
}

}  // namespace

CLI::App* register_stage(CLI::App& app, StageOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "stage", "Snapshot this project onto the shared mount and run a command from it on every worker");
  add_target_options(*cmd, o.target);
  // One value per flag: a vector option would otherwise swallow the command
  // after `--` and parse its flags as ours.
  cmd->add_option("--tag", o.tags, "Label for the run id, e.g. --tag lr=0.1 (repeatable)")->allow_extra_args(false);
  cmd->add_option("--env", o.env.pairs, "Environment variable for the job, KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--env-file", o.env.files, "Read KEY=VALUE lines for the job from FILE (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--env-from", o.env.from, "Pass this local variable's value to the job (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--detach", o.detach, "Launch and return; don't tail the logs");
  cmd->add_flag("--raw,--no-collapse", o.raw,
                "Print every worker's every line with its prefix (default: a line that several workers print "
                "is shown once, as [w0-7] ...; see docs/output.md)");
  cmd->add_flag("--json", o.json, "Print the run id, staged dir, log dir and launch results as JSON (implies --detach)");
  cmd->add_flag("--dry-run", o.dry_run, "Show what would be staged and launched; change nothing");
  cmd->add_flag("--ignore-claim", o.ignore_claim, "Go ahead on a pod that another user has claimed (tpurun claims)");
  cmd->add_option("--wait", o.wait_pod,
                  "With --pod auto or --pod 'glob*': when no pod is free, wait for one, scanning again every "
                  "INTERVAL (default 30s) and saying what it waits for; Ctrl-C stops")
      ->expected(0, 1)
      ->type_name("[INTERVAL]");
  cmd->add_flag("--skip-preflight", o.skip_preflight, "Don't check who holds the TPU before launching");
  cmd->add_flag("--kill-previous", o.kill_previous, "Kill your own jobs that hold the TPU first (like tpurun kill)");
  cmd->add_option("--on-failure", o.on_failure,
                  "stop: when one worker fails or is lost, stop the run on every worker (a TPU pod makes "
                  "no progress without all of them); continue: let the others run on")
      ->default_str("stop");
  cmd->add_option("--restarts", o.restarts, "After a failure, relaunch the whole run up to N times (TPURUN_ATTEMPT)")
      ->default_str("0");
  cmd->add_option("--lost-after", o.lost_after, "A worker unreachable for this long counts as lost")
      ->default_str("60s");
  cmd->add_option("--grace", o.grace, "When stopping the run: time between SIGTERM and SIGKILL")->default_str("10s");
  cmd->add_option("--megascale-port", o.megascale_port,
                  "Multi-slice runs: MEGASCALE_PORT and the coordinator's port (default: the pod's "
                  "\"megascale_port\", else 8080)")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("command", o.argv, "The command to run in the snapshot on every worker, after --");
  cmd->footer(R"(What happens:
  1. checks that no one holds the TPU on the selected workers (see tpurun status);
  2. snapshots the code (git's files: tracked + untracked-not-ignored, minus
     .tpurunignore) into <staging_root>/<user>/<yymmddHHMMSS>-<rand>-<sha>-code,
     read-only, deduplicated by content so an unchanged re-stage copies nothing;
  3. creates <logs_root>/<user>/<project>/<run id>/ with run.json and git.diff;
  4. starts the command in the snapshot on every worker, detached from SSH:
     Ctrl-C or a dropped connection never stops it. Each worker logs to
     workerN.log and records its pid and exit code there;
  5. starts the run's watcher, a detached tpurun process on this host, so the
     rules below hold with no client attached (--detach, Ctrl-C, a closed
     SSH session, even a SIGKILLed client);
  6. tails every worker's log until the run ends (unless --detach), then
     prints one summary.
The job sees TPURUN_RUN_ID, TPURUN_LOG_DIR, TPURUN_WORKER, TPURUN_NUM_WORKERS
and TPURUN_ATTEMPT (1, then 2, ... on restarts).

A run is a gang: when any worker's job exits non-zero or is lost (its host
unreachable for --lost-after, or its job gone without an exit record), the
watcher stops the run on every other worker: your processes only, whole
trees, SIGTERM, then SIGKILL after --grace. A worker that exits 0 stops nobody.
With --restarts N the whole run is then relaunched from the same snapshot into
the same log dir, once every worker is reachable and free again (backing off
2s, 4s, 8s, ...). Exit status: 0 when every worker exited 0; the first failing
worker's exit code; 255 when it was lost; 130 when you only detached.

Multi-slice: --pod A,B (or a config pod with "slices": ["A", "B"]) runs one
job across the pods A and B, each a slice, as one gang. Workers are numbered
across the slices (TPURUN_WORKER, workerN.log; shown as [w5 s1w1 HOST]) and
each job also gets MEGASCALE_COORDINATOR_ADDRESS (slice 0's worker 0),
MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID, MEGASCALE_PORT, TPURUN_SLICE,
TPURUN_SLICE_WORKER and TPURUN_NUM_SLICES (--env may not set those four
MEGASCALE_* variables; --megascale-port sets the port); see docs/multislice.md.

--pod auto picks the first pod in config order that is free on every worker
and not claimed by another user (--pod 'v4-32*' limits the choice), and says
why it skipped the others; with --wait, it waits until one is free. See
docs/board.md.

Resuming from a checkpoint on restart:
  tpurun stage --restarts 3 -- python3 main.py --workdir=/nfs/ckpt/run1
  # main.py:
  #   if int(os.environ["TPURUN_ATTEMPT"]) > 1:   # relaunched after a failure
  #       state = checkpoints.restore_checkpoint(workdir, state)

Environment for the job (values reach the workers on stdin, never in a
command line; run.json and --dry-run show the names only):
  --env KEY=VALUE      on the command line (your shell history keeps it)
  --env-file FILE      KEY=VALUE lines; # comments and blank lines skipped;
                       values taken literally (no quotes, no $ expansion)
  --env-from NAME      the value of your local variable NAME, e.g. a secret
                       you exported: --env-from WANDB_API_KEY
  Later sources win: files, then --env-from, then --env. TPURUN_* names are
  tpurun's own and refused.

Examples:
  tpurun stage -- python3 main.py --config=configs/tpu.py
  tpurun stage --tag b1024 --tag lr=0.1 --env WANDB_MODE=offline -- python3 main.py
  tpurun stage --env-file .env.tpu --env-from WANDB_API_KEY -- python3 main.py
  tpurun stage --detach --json -- python3 main.py | jq -r .run_id
  tpurun stage --restarts 2 --lost-after 2m -- python3 main.py --resume=auto
  tpurun stage --on-failure continue -- python3 eval_shard.py   # independent workers
  tpurun logs RUN -f       # reattach          tpurun kill --run RUN    # stop)");
  return cmd;
}

GangFlags parse_gang_flags(const StageOptions& o) {
  if (o.on_failure != "stop" && o.on_failure != "continue") {
    throw UsageError(fmt::format("--on-failure {}: use stop (the default: one failure stops the whole run) or "
                                 "continue", o.on_failure));
  }
  if (o.restarts < 0 || o.restarts > 1000) {
    throw UsageError(fmt::format("--restarts {}: give a count from 0 (no restarts) to 1000", o.restarts));
  }
  GangFlags flags;
  flags.lost_after_ms = parse_duration(o.lost_after).count();
  if (flags.lost_after_ms < 1000) {
    throw UsageError(fmt::format("--lost-after {}: must be at least 1s (a worker is lost after being "
                                 "unreachable this long)", o.lost_after));
  }
  flags.grace_ms = parse_duration(o.grace).count();
  if (flags.grace_ms > 3600 * 1000LL) throw UsageError(fmt::format("--grace {}: at most 1h", o.grace));
  return flags;
}

int run_stage(const StageOptions& o, Context& ctx) {
  if (o.argv.empty()) throw UsageError("nothing to run: give the command after -- (see tpurun stage --help)");
  const GangFlags gang = parse_gang_flags(o);
  const auto env = resolve_job_env(o.env, ctx.env);
  pick_pod(ctx, o.ignore_claim, parse_pod_wait(o.wait_pod, o.dry_run));  // --pod auto / --pod 'glob*' [--wait]
  Target target = resolve_target(o.target, ctx);
  require_roots(target.pod);
  respect_claims(target.pod, o.ignore_claim, ctx);
  const std::optional<MultiSlice> slices = plan_multislice(target, o.megascale_port, env);
  const std::string user = local_user(ctx.env);
  const std::string project = project_name(std::filesystem::current_path());
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);

  if (o.dry_run) {
    fmt::print(ctx.out, "dry run: nothing is staged, created or launched.\n");
    fmt::print(ctx.out, "pod '{}': {} of {} workers\n", target.pod.name, target.workers.size(), target.pod.workers.size());
    if (slices) fmt::print(ctx.out, "{}\n", describe_multislice(target.pod, *slices));
    for (const Worker& w : target.workers) fmt::print(ctx.out, "  {}\n", w.display());
    fmt::print(ctx.out, "snapshot of {} into {}/{}/<yymmddHHMMSS>-<rand>-<sha>-code\n",
               std::filesystem::current_path().string(), target.pod.staging_root, user);
    fmt::print(ctx.out, "log dir {}/{}/{}/{}\n", target.pod.logs_root, user, project,
               make_run_id(std::chrono::system_clock::now(), "<rand>", target.pod.name, o.tags));
    fmt::print(ctx.out, "command on each worker (in the snapshot, detached): {}\n", fmt::join(o.argv, " "));
    for (const auto& [key, value] : env) fmt::print(ctx.out, "  env {}=<value hidden>\n", key);
    return 0;
  }

  // A squatted logs dir stops the run before anything is snapshotted.
  if (auto logs = open_own_path(target.pod.logs_root, {user}, Create::if_missing); !logs && logs.error().unsafe()) {
    throw UnsafeDirError(logs.error());
  }
  auto transport = ctx.make_transport(target.pod);
  if (!o.skip_preflight) {
    run_preflight(target.pod, target.workers, *transport, {o.kill_previous, o.target.fanout}, printer, ctx);
  }
  StagedSnapshot staged = snapshot(target, user, ctx, printer);
  printer.note(fmt::format("staged {} files ({}, {} reused) → {}", staged.files, human_size(staged.bytes),
                           human_size(staged.bytes_reused), staged.dir));

  const auto now = std::chrono::system_clock::now();
  RunRecord record;
  record.run_id = make_run_id(now, random_suffix(), target.pod.name, o.tags);
  record.log_dir = create_log_dir(target.pod.logs_root, user, project, record.run_id);
  record.user = user;
  record.pod = target.pod.name;
  record.project = project;
  record.workers = target.workers;
  if (slices) record.slices = slice_pods(target.pod);
  record.megascale = slices;
  record.command = o.argv;
  record.env_names = env_names(env);  // never the values: run.json is readable by others
  record.tags = o.tags;
  record.staged_dir = staged.dir;
  record.git_sha = staged.git.sha;
  record.git_branch = staged.git.branch;
  record.git_dirty = staged.git.dirty;
  record.tree_hash = staged.tree_hash;
  record.created_at = iso8601_utc(now);
  record.on_failure = o.on_failure;
  record.restarts = o.restarts;
  record.lost_after_ms = gang.lost_after_ms;
  record.grace_ms = gang.grace_ms;
  write_run_record(record, staged.git.diff);
  if (!env.empty() && o.restarts > 0) save_run_env(run_env_dir(ctx), record.run_id, env);
  printer.note(fmt::format("run {} → {}", record.run_id, record.log_dir));

  // The watcher starts first, so the gang rules hold even if this client is
  // killed while launching.
  const int watcher = start_watcher(record, ctx);
  LaunchSpec spec{record.run_id, record.log_dir, staged.dir, o.argv, env,
                  static_cast<int>(target.pod.workers.size()), 1, 1 + o.restarts, slices};
  LaunchResult launched = launch_on_workers(spec, target.workers, *transport, o.target.fanout, ctx.cancel);
  std::vector<WorkerOutcome>& launches = launched.outcomes;
  std::vector<Worker> running;
  nlohmann::json json_workers = nlohmann::json::array();
  for (const WorkerOutcome& launch : launches) {
    auto pid = launched.pids.find(launch.worker.index);
    if (pid != launched.pids.end()) running.push_back(launch.worker);
    nlohmann::json j = worker_json(launch.worker);
    j["pid"] = pid != launched.pids.end() ? nlohmann::json(pid->second) : nlohmann::json(nullptr);
    j["error"] = launch.error() ? nlohmann::json(launch.error()->message) : nlohmann::json(nullptr);
    json_workers.push_back(j);
  }
  // A worker where the job did not start has failed, as far as the gang goes:
  // its log says why and its exit record says 255, so the watcher and `runs`
  // see it like any other failure.
  for (const WorkerOutcome& launch : launches) {
    if (launched.pids.count(launch.worker.index)) continue;
    const std::string why = launch.error() ? launch.error()->message : "the job did not start";
    std::FILE* log = std::fopen(worker_log_path(record.log_dir, launch.worker.index).c_str(), "a");
    if (log) {
      fmt::print(log, "tpurun: the job did not start on {}: {}\n", launch.worker.display(), why);
      std::fclose(log);
    }
    write_file_atomic(job_file(record.log_dir, launch.worker.index, 1, "exit"), "255\n");
  }
  if (running.size() < launches.size()) {
    print_failure_summary(printer, launches);
    if (!running.empty()) {
      printer.note(fmt::format("the job started on {} of {} workers only; the watcher counts the others as failed "
                               "(on failure: {})", running.size(), launches.size(), o.on_failure));
    }
  } else {
    printer.note(fmt::format("launched on {} workers{} (detached; Ctrl-C only stops following)", running.size(),
                             slices ? fmt::format(" in {} slices", slices->num_slices) : ""));
  }

  if (o.json) {
    nlohmann::json doc{{"run_id", record.run_id}, {"pod", target.pod.name}, {"staged_dir", staged.dir}, {"log_dir", record.log_dir},
                       {"watcher_pid", watcher}, {"workers", json_workers}};
    if (slices) doc["slices"] = record.slices;
    print_json(ctx.out, doc);
  }
  if (o.detach || o.json || running.empty()) {
    if (!o.json) printer.note(fmt::format("follow: tpurun logs {} -f   stop: tpurun kill --run {}", record.run_id, record.run_id));
    return running.size() < launches.size() ? 255 : 0;
  }
  return follow_to_end(record, record.workers, printer, ctx, o.raw);
}

}  // namespace tpurun::cli
