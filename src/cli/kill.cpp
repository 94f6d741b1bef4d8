// tpurun kill: stop your own jobs on every worker, whole process trees, and
// check that the TPU is free afterwards. Other users' processes are listed,
// never signalled, unless an admin says --force --yes.
#include "cli/kill.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "cli/help_texts.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/record/recorded_pod.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/runs/watcher/records_verdict.hpp"
#include "tpurun/runs/watcher/watcher_control.hpp"
#include "tpurun/tpu/kill_audit.hpp"
#include "tpurun/ui/kill_report.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun::cli {

int parse_grace(const std::string& text) {
  const auto ms = parse_duration(text).count();
  if (ms > kMaxGraceMs) {
    throw UsageError(fmt::format("--grace {}: at most {}", text, format_duration_ms(kMaxGraceMs)));
  }
  return static_cast<int>(ms);
}

namespace {

// The run waits for its next attempt (a restart, its TPU VM preempted or
// being recreated): its VM is looked up as gcloud says now, not in a kept
// describe that may name the preempted one's workers.
bool between_attempts(const std::string& run, Context& ctx) {
  try {
    const PodConfig pod = load_pod_records(ctx);
    if (pod.logs_root.empty()) return false;
    const auto state = read_run_state(find_run_dir(pod.logs_root, local_user(ctx.env), run));
    return state && state->verdict == RunVerdict::restarting;
  } catch (const std::exception&) {
    return false;  // said below, where the run is looked up for the kill
  }
}

// kill --run while the run's TPU VM is not there, or not READY (preempted,
// being recreated: a queued resource that waits): there is no worker to
// signal, but the run is stopped all the same (issue 39, finding 10). Its
// stop marker and its watcher: a recreate in progress stops, and deletes
// what it created.
int kill_run_while_vm_away(const std::string& run, const TpuUnavailable& e, Context& ctx, LinePrinter& printer) {
  PodConfig pod = load_pod_records(ctx);
  if (auto other = ctx.pod_request.pod ? std::nullopt : other_pod_of_run(pod, run, ctx)) {
    ctx.pod_request.pod = *other;
    pod = load_pod_records(ctx);
  }
  if (pod.logs_root.empty()) throw e;
  const std::string user = local_user(ctx.env);
  const std::string dir = find_run_dir(pod.logs_root, user, run);
  const std::string run_id = std::filesystem::path(dir).filename().string();
  const auto before = read_run_state(dir);
  if (before && is_final(before->verdict)) {
    printer.note(fmt::format("run {} has ended already ({}); {}", run_id, to_string(before->verdict), e.what()));
    return 0;
  }
  stop_watchers(Target{pod, {}}, run_id, user, printer);
  printer.note(fmt::format("run {} was stopped while its TPU VM was away ({}): no worker to signal; its watcher "
                           "records the run as stopped and stops a recreate in progress, deleting what it created",
                           run_id, e.what()));
  return 0;
}

}  // namespace

CLI::App* register_kill(CLI::App& app, KillCommandOptions& o) {
  CLI::App* cmd =
      app.add_subcommand("kill", "Stop your jobs that hold the TPU, on every worker, and verify it is free");
  add_target_options(*cmd, o.target);
  cmd->add_option("--run", o.run,
                  "Only this tpurun run (its id, a unique prefix, or 'last'); your other jobs are left alone");
  cmd->add_option("--grace", o.grace, "Time between SIGTERM and SIGKILL")->capture_default_str();
  cmd->add_flag("--dry-run", o.dry_run, "Show exactly what would be signalled and removed; signal nothing");
  cmd->add_flag("--json", o.json, "Print one JSON record per worker (schema: docs/ownership.md)");
  cmd->add_flag("--force", o.force,
                "Admins: also kill other users' processes holding the TPU, via sudo -n (needs --yes)");
  cmd->add_flag("--yes", o.yes, "Confirm --force");
  cmd->footer(help::kKill);
  return cmd;
}

int run_kill(const KillCommandOptions& o, Context& ctx) {
  if (o.force && !o.yes && !o.dry_run) {
    throw UsageError(
        "--force kills other users' processes (as root, via sudo -n) and is recorded in the audit log; "
        "add --yes to confirm, and try --dry-run --force first to see whom it would hit");
  }
  if (o.yes && !o.force) throw UsageError("--yes only confirms --force");
  KillRequest request;
  request.grace_ms = parse_grace(o.grace);
  if (!o.run.empty()) request.options.run_id = o.run;
  request.options.force = o.force;
  request.dry_run = o.dry_run;

  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  if (!o.run.empty() && between_attempts(o.run, ctx)) ctx.pod_request.describe_fresh = true;
  std::optional<Target> found;
  try {
    found = resolve_target(o.target, ctx);
  } catch (const TpuUnavailable& e) {
    if (o.run.empty() || o.dry_run) throw;
    return kill_run_while_vm_away(o.run, e, ctx, printer);
  }
  Target target = std::move(*found);
  if (auto pod = ctx.pod_request.pod ? std::nullopt : other_pod_of_run(target.pod, o.run, ctx)) {
    printer.note(fmt::format("run {} was started on pod '{}': killing it there", o.run, *pod));
    ctx.pod_request.pod = *pod;
    target = resolve_target(o.target, ctx);
  }
  request.device_globs = target.pod.device_globs;
  // A run id that names no run is a mistake to say, as `logs` says it; the
  // prefix is made whole, so the kill and its watcher agree on one run.
  std::optional<std::string> run_dir;
  if (!o.run.empty() && !target.pod.logs_root.empty()) {
    run_dir = find_run_dir(target.pod.logs_root, local_user(ctx.env), o.run);
    request.options.run_id = std::filesystem::path(*run_dir).filename().string();
  }

  std::optional<AuditLog> audit;
  if (o.force && !o.dry_run) {
    // Your own file, never the shared logs_root: see kill_audit.hpp.
    audit.emplace(default_audit_path(ctx.env), local_user(ctx.env), target.pod.name,
                  [] { return std::time(nullptr); });
    request.before_signal = audit->before_signal();
  }

  // The run as found above ("last" and a prefix made whole), so its watcher
  // hears of the kill before any job gets a signal: a job's SIGTERM exit
  // would otherwise count as a failure, and --restarts relaunch it.
  if (!o.dry_run) stop_watchers(target, request.options.run_id.value_or(""), local_user(ctx.env), printer);
  auto transport = ctx.make_transport(target.pod);
  printer.progress(
      fmt::format("{} on {}...", o.dry_run ? "scanning" : "killing", count_of(target.workers.size(), "worker")));
  auto reports = kill_on_workers(target.workers, *transport, o.target.fanout, ctx.cancel, request);
  printer.clear_progress();

  const int code = ctx.cancel.cancelled() ? 130 : kill_exit_code(reports, o.dry_run);
  if (o.json) {
    nlohmann::json doc{{"pod", target.pod.name},
                       {"dry_run", o.dry_run},
                       {"exit_code", code},
                       {"workers", nlohmann::json::array()}};
    for (const WorkerKill& r : reports) doc["workers"].push_back(kill_report_to_json(r, o.dry_run));
    print_json(ctx.out, doc);
  } else {
    std::string text = format_kill_report(reports, request, ctx.out_is_tty);
    std::fwrite(text.data(), 1, text.size(), ctx.out);
    std::fflush(ctx.out);
  }
  if (run_dir && !o.dry_run) {
    if (const std::string note = record_unwatched_stop(*run_dir, ctx.cancel); !note.empty()) printer.note(note);
  }
  if (audit && std::any_of(reports.begin(), reports.end(),
                           [](const WorkerKill& r) { return r.signalled && r.plan.needs_root; })) {
    printer.note("recorded in " + audit->path() + " and in each worker's syslog (journalctl -t tpurun)");
  }
  return code;
}

}  // namespace tpurun::cli
