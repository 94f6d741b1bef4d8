// tpurun stage: snapshot the code onto the shared mount, create the run's log
// dir, launch the command detached on every worker, and follow it.
#include "cli/stage.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>

#include "cli/down.hpp"
#include "cli/help_texts.hpp"
#include "cli/kill.hpp"
#include "tpurun/board/pod_pick.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/follow/follow.hpp"
#include "tpurun/runs/stage/multislice_plan.hpp"
#include "tpurun/runs/stage/stage.hpp"
#include "tpurun/runs/watcher/restart_codes.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun::cli {

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
                  "When the workers are reserved by another stage or run, or someone else holds their TPU, wait "
                  "until they are free, looking again every INTERVAL (default 30s); with --pod auto or --pod "
                  "'glob*', wait for a free pod. It says what it waits for; Ctrl-C stops")
      ->expected(0, 1)
      ->type_name("[INTERVAL]");
  cmd->add_flag("--skip-preflight", o.skip_preflight, "Don't check who holds the TPU before launching");
  cmd->add_flag("--kill-previous", o.kill_previous, "Kill your own jobs that hold the TPU first (like tpurun kill)");
  cmd->add_option("--on-failure", o.on_failure,
                  "stop: when one worker fails or is lost, stop the run on every worker (a TPU pod makes "
                  "no progress without all of them); continue: let the others run on")
      ->capture_default_str();
  cmd->add_option("--restarts", o.restarts, "After a failure, relaunch the whole run up to N times (TPURUN_ATTEMPT)")
      ->capture_default_str();
  cmd->add_option("--restart-on-exit-codes", o.restart_on_exit_codes,
                  "Restart only failures with these exit codes: xpk's 42 and 127-255 (signals, a lost worker), "
                  "plus LIST, e.g. 1,3-5; other codes end the run at once")
      ->expected(0, 1)
      ->type_name("[LIST]");
  cmd->add_flag("--down", o.down,
                "Once the run has ended (whatever its verdict) and its logs are on the shared mount, delete the "
                "pod's TPU VM and its queued resource, as `tpurun down --yes` does");
  cmd->add_flag("--recreate", o.recreate,
                "gcloud pods: when the TPU VM is PREEMPTED, TERMINATED or deleted, delete it, create it again "
                "as it was, run the pod's \"setup\" on it (with no shared mount: copy the snapshot to it) and resume "
                "the run (uses up no --restarts)");
  cmd->add_option("--max-preemptions", o.max_preemptions,
                  fmt::format("With --recreate: how many preemptions to recover from (default {}); the next one "
                              "ends the run", GangRules{}.max_preemptions))
      ->type_name("M");
  cmd->add_option("--lost-after", o.lost_after, "A worker unreachable for this long counts as lost")
      ->capture_default_str();
  cmd->add_option("--grace", o.grace, "When stopping the run: time between SIGTERM and SIGKILL")
      ->capture_default_str();
  cmd->add_option("--stall-after", o.stall_after,
                  "A run whose every worker shows 0% duty cycle (libtpu's metrics, as `tpurun top`) and no new "
                  "log line for this long is stalled: `tpurun runs` says so")
      ->capture_default_str();
  cmd->add_option("--on-stall", o.on_stall,
                  "report: only say so; stop: stop the run on every worker, as a failure; restart: the same, "
                  "then relaunch it if --restarts allows")
      ->capture_default_str();
  cmd->add_option("--megascale-port", o.megascale_port,
                  "Multi-slice runs: MEGASCALE_PORT and the coordinator's port (default: the pod's "
                  "\"megascale_port\", else 8080)")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("command", o.argv, "The command to run in the snapshot on every worker, after --");
  cmd->footer(help::kStage);
  return cmd;
}

GangRules parse_gang_flags(const StageOptions& o) {
  if (o.on_failure != "stop" && o.on_failure != "continue") {
    throw UsageError(fmt::format("--on-failure {}: use stop (the default: one failure stops the whole run) or "
                                 "continue", o.on_failure));
  }
  if (o.restarts < 0 || o.restarts > 1000) {
    throw UsageError(fmt::format("--restarts {}: give a count from 0 (no restarts) to 1000", o.restarts));
  }
  GangRules rules;
  rules.on_failure = o.on_failure;
  rules.restarts = o.restarts;
  rules.lost_after_ms = parse_duration(o.lost_after).count();
  if (rules.lost_after_ms < 1000) {
    throw UsageError(fmt::format("--lost-after {}: must be at least 1s (a worker is lost after being "
                                 "unreachable this long)", o.lost_after));
  }
  rules.grace_ms = parse_grace(o.grace);
  if (o.restart_on_exit_codes) {
    std::string why;
    auto codes = RestartCodes::parse(*o.restart_on_exit_codes, &why);
    if (!codes) throw UsageError(fmt::format("--restart-on-exit-codes {}: {}", *o.restart_on_exit_codes, why));
    if (o.restarts == 0) {
      throw UsageError("--restart-on-exit-codes limits which failures --restarts relaunches: give --restarts N too");
    }
    rules.restart_on_exit_codes = codes->text();
  }
  rules.recreate = o.recreate;
  if (o.max_preemptions) {
    if (!o.recreate) {
      throw UsageError("--max-preemptions bounds how often --recreate brings a preempted TPU VM back: add --recreate");
    }
    if (*o.max_preemptions < 0 || *o.max_preemptions > 100) {
      throw UsageError(fmt::format("--max-preemptions {}: give a count from 0 to 100", *o.max_preemptions));
    }
    rules.max_preemptions = *o.max_preemptions;
  }
  if (o.on_stall != "report" && o.on_stall != "stop" && o.on_stall != "restart") {
    throw UsageError(fmt::format("--on-stall {}: use report (the default: only say so), stop or restart",
                                 o.on_stall));
  }
  rules.on_stall = o.on_stall;
  rules.stall_after_ms = parse_duration(o.stall_after).count();
  if (rules.stall_after_ms < 1000) {
    throw UsageError(fmt::format("--stall-after {}: must be at least 1s (a run is stalled after this long at 0% "
                                 "duty cycle with no new log line)", o.stall_after));
  }
  return rules;
}

namespace {

void print_dry_run(const StagePlan& plan, std::FILE* out) {
  const Target& target = plan.target;
  fmt::print(out, "dry run: nothing is staged, created or launched.\n");
  fmt::print(out, "pod '{}': {} of {} workers\n", target.pod.name, target.workers.size(), target.pod.workers.size());
  if (plan.slices) fmt::print(out, "{}\n", multislice_text(target.pod, *plan.slices));
  for (const Worker& w : target.workers) fmt::print(out, "  {}\n", w.display());
  fmt::print(out, "snapshot of {} into {}/{}/<yymmddHHMMSS>-<rand>-<sha>-code\n", plan.source_dir,
             target.pod.staging_root, plan.user);
  const std::string log_dir =
      fmt::format("{}/{}/{}/{}", target.pod.logs_root, plan.user, plan.project,
                  make_run_id(std::chrono::system_clock::now(), "<rand>", target.pod.name, plan.request.tags));
  fmt::print(out, "log dir {}\n", log_dir);
  fmt::print(out, "command on each worker (in the snapshot, detached): {}\n", fmt::join(plan.request.argv, " "));
  for (const auto& [key, value] : plan.request.env) fmt::print(out, "  env {}=<value hidden>\n", key);
  const auto recreate = planned_recreate(plan, log_dir);
  if (recreate.empty()) return;
  fmt::print(out, "if TPU VM {} is PREEMPTED, TERMINATED or deleted (--recreate, at most {} time{}), the run's "
                  "watcher runs:\n",
             target.pod.gcloud->name, plan.request.gang.max_preemptions,
             plan.request.gang.max_preemptions == 1 ? "" : "s");
  for (const auto& argv : recreate) fmt::print(out, "  {}\n", shell_display(argv));
  if (target.pod.setup_script.empty()) {
    fmt::print(out, "  (no \"setup\" script for pod '{}': nothing is set up on the new VM)\n", target.pod.name);
  } else {
    fmt::print(out, "  setup: bash -s < {} on every worker (output: {}/setup.log)\n", target.pod.setup_script, log_dir);
  }
  if (!target.pod.shared_mount) fmt::print(out, "  the snapshot copied to the new VM's workers (no shared mount)\n");
  fmt::print(out, "  then attempt N+1 from the same snapshot\n");
}

nlohmann::json launch_json(const StagedRun& run, const StagePlan& plan) {
  nlohmann::json workers = nlohmann::json::array();
  for (const WorkerOutcome& launch : run.launched.outcomes) {
    auto pid = run.launched.pids.find(launch.worker.index);
    nlohmann::json j = worker_json(launch.worker);
    j["pid"] = pid != run.launched.pids.end() ? nlohmann::json(pid->second) : nlohmann::json(nullptr);
    j["error"] = launch.error() ? nlohmann::json(launch.error()->message) : nlohmann::json(nullptr);
    workers.push_back(j);
  }
  nlohmann::json doc{{"run_id", run.record.run_id}, {"pod", plan.target.pod.name}, {"staged_dir", run.staged.dir},
                     {"log_dir", run.record.log_dir}, {"watcher_pid", run.watcher_pid}, {"workers", workers}};
  if (plan.slices) doc["slices"] = run.record.slices;
  return doc;
}

}  // namespace

int run_stage(const StageOptions& o, Context& ctx) {
  if (o.argv.empty()) throw UsageError("nothing to run: give the command after -- (see tpurun stage --help)");
  StageRequest request;
  request.gang = parse_gang_flags(o);
  request.env = resolve_job_env(o.env, ctx.env);
  request.argv = o.argv;
  request.tags = o.tags;
  request.workers = o.target.workers;
  request.fanout = o.target.fanout;
  request.ignore_claim = o.ignore_claim;
  request.wait_pod = parse_pod_wait(o.wait_pod, o.dry_run);
  request.megascale_port = o.megascale_port;
  request.skip_preflight = o.skip_preflight;
  request.kill_previous = o.kill_previous;
  // The watcher deletes only the VM whose id it recorded at stage time: that
  // id must be today's, not a kept describe's from before a recreate.
  if (o.recreate) ctx.pod_request.describe_fresh = true;
  if (o.down && (o.detach || o.json)) {
    throw UsageError("--down deletes the TPU VM once stage has followed the run to its end: not with --detach or --json");
  }
  const StagePlan plan = plan_stage(std::move(request), ctx);
  if (o.down && (!plan.target.pod.gcloud || !plan.target.pod.slices.empty())) {
    throw UsageError(fmt::format("--down: pod '{}' is not one gcloud TPU VM; there is nothing for tpurun to delete",
                                 plan.target.pod.name));
  }
  if (o.down) {
    // down's rules now, not after the run (issue 39, finding 13): another
    // user's VM is refused before anything starts, --dry-run included.
    if (auto why = down_refused_now(plan.target.pod, ctx)) {
      throw UsageError(fmt::format("--down: pod '{}': its TPU VM would not be deleted once the run ends: {}; "
                                   "nothing was started", plan.target.pod.name, *why));
    }
  }
  if (o.dry_run) {
    print_dry_run(plan, ctx.out);
    if (o.down) {
      fmt::print(ctx.out, "then (--down), once the run has ended: TPU VM {} and its queued resource deleted, as "
                 "`tpurun down --yes` (`tpurun down --dry-run` shows the commands)\n", plan.target.pod.gcloud->name);
    }
    return 0;
  }

  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  const StagedRun run = start_run(plan, ctx, printer);
  const size_t launched = run.launched.outcomes.size();
  if (run.running.size() < launched) {
    print_failure_summary(printer, run.launched.outcomes);
    if (!run.running.empty()) {
      printer.note(fmt::format("the job started on {} of {} workers only; the watcher counts the others as lost "
                               "(on failure: {})", run.running.size(), launched, o.on_failure));
    }
  } else {
    printer.note(fmt::format("launched on {}{} (detached; Ctrl-C only stops following)", count_of(run.running.size(), "worker"),
                             plan.slices ? fmt::format(" in {} slices", plan.slices->num_slices) : ""));
  }
  if (o.json) print_json(ctx.out, launch_json(run, plan));
  if (run.running.empty()) {
    if (!o.json) {
      printer.note(fmt::format("the job started on no worker: run {} ends as lost (`tpurun runs`; its log dir "
                               "says why per worker)", run.record.run_id));
    }
    return 255;
  }
  if (o.detach || o.json) {
    if (!o.json) {
      printer.note(fmt::format("follow: tpurun logs {} -f   stop: tpurun kill --run {}", run.record.run_id,
                               run.record.run_id));
    }
    return run.running.size() < launched ? 255 : 0;
  }
  const int code = follow_to_end(run.record, run.record.workers, printer, ctx, o.raw);
  if (!o.down) return code;
  if (ctx.cancel.cancelled()) {
    printer.note(fmt::format("--down: not deleting the TPU VM: following was {}, and the run goes on; `tpurun down "
                             "--yes` deletes the TPU VM once it has ended (`tpurun runs` says when)", interrupted_by()));
    return code;
  }
  printer.note(fmt::format("--down: run {} has ended (exit {}); deleting the pod's TPU VM", run.record.run_id, code));
  DownOptions down;
  down.yes = true;
  const int down_code = down_pod(plan.target.pod, down, ctx);
  return code != 0 ? code : down_code;
}

}  // namespace tpurun::cli
