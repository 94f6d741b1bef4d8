// tpurun down: the pod's TPU VM and its queued resource, deleted.
#include "cli/down.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "cli/help_texts.hpp"
#include "tpurun/cloud/down.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/describe_cache.hpp"
#include "tpurun/pod/down_intent.hpp"
#include "tpurun/pod/placement.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/runs/watcher/recent_runs.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/ui/confirm.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun::cli {
namespace {

// This user's runs on the pod that have not ended, by their records (the
// newest 20): deleting the VM ends them, so down names them first.
std::vector<std::string> unended_runs_on(const PodConfig& pod, const std::string& user) {
  std::vector<std::string> ids;
  if (pod.logs_root.empty()) return ids;
  for (const RunView& run : recent_runs(pod.logs_root, user, 20, [](const std::string&) {})) {
    // No state.json yet (its watcher has just started): the job records say.
    const bool unended = run.state ? !is_final(run.state->verdict)
                                   : std::any_of(run.jobs.begin(), run.jobs.end(),
                                                 [](const WorkerJob& j) { return j.state == JobState::running; });
    if (run.record.pod == pod.name && unended) ids.push_back(run.record.run_id);
  }
  return ids;
}

// "`down` means down" (issue 39, finding 9): before anything is deleted, an
// intent that this user's running `up` of the pod and the watchers of its
// --recreate runs obey (pod/down_intent): the up stops and deletes what it
// made; a watcher ends its run as stopped instead of making the VM again.
void leave_down_intent(const PodConfig& pod, const DownJob& job, Context& ctx, LinePrinter& printer) {
  DownIntent intent;
  intent.at = std::chrono::system_clock::now();
  intent.tpu = job.gcloud.name;
  intent.zone = job.gcloud.zone;
  intent.project = job.gcloud.project;
  intent.pod = pod.name;
  intent.host = host_name();
  intent.pid = static_cast<int>(::getpid());
  try {
    write_down_intent(down_intent_path(job.gcloud, ctx.env), intent);
  } catch (const std::exception& e) {
    printer.note(fmt::format("warning: cannot record that the pod is going down ({}): an `up` or a --recreate run of "
                             "yours still running may make TPU VM {} again",
                             e.what(), job.gcloud.name));
  }
}

}  // namespace

CLI::App* register_down(CLI::App& app, DownOptions& o) {
  CLI::App* cmd = app.add_subcommand("down", "Delete the pod's TPU VM and its queued resource, and wait until gone");
  cmd->add_flag("-y,--yes", o.yes, "Delete without asking (needed when stdin is not a terminal)");
  cmd->add_flag("--dry-run", o.dry_run, "Say what is there and the exact gcloud commands; delete nothing");
  cmd->add_flag("--force", o.force,
                "Delete even when another user claims the pod or holds its TPU, or tpurun did not make the VM for you");
  cmd->footer(help::kDown);
  return cmd;
}

int down_pod(const PodConfig& pod, const DownOptions& o, Context& ctx) {
  if (!pod.gcloud) {
    throw UsageError(fmt::format("pod '{}' lists its workers: there is no TPU VM of it for tpurun to delete", pod.name));
  }
  // No one to ask: refused before gcloud is asked anything.
  if (!o.yes && !o.dry_run && !can_ask(ctx)) {
    throw UsageError(fmt::format("pod '{}': deleting its TPU VM {} (and its queued resource) needs --yes (or an "
                                 "answer on a terminal); `tpurun down --dry-run` shows what is there",
                                 pod.name, pod.gcloud->name));
  }
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  DownJob job = down_job_for(pod, ctx.env, o.force);
  auto transport = ctx.make_transport(pod);
  DownIo io{ctx.processes, *transport, ctx.cancel, [&](const std::string& line) { printer.note(line); }};
  const DownFacts facts = find_down_facts(job, pod.create ? pod.create->zones : std::vector<std::string>{}, io);
  if (nothing_left(facts) && facts.describe_error.empty()) {
    // An up between two zones, or a recreate between its delete and its
    // create, has nothing there now, and must still not make one.
    if (!o.dry_run) leave_down_intent(pod, job, ctx, printer);
    forget_placement(*pod.gcloud, ctx.env);
    forget_describe(*pod.gcloud, ctx.env);
    printer.note(fmt::format("pod '{}': nothing to delete: no TPU VM {} and no queued resource in {}", pod.name,
                             pod.gcloud->name, pod.create ? fmt::format("{}", fmt::join(pod.create->zones, ", "))
                                                          : pod.gcloud->zone));
    return 0;
  }
  const std::string there = down_facts_text(facts, job.gcloud);
  if (auto why = down_refusal(facts, job.user, o.force)) {
    printer.note(fmt::format("pod '{}': not deleting {}: {}", pod.name, there, *why));
    return 1;
  }
  // A run of yours on it ends when the VM goes (issue 39, finding 12): said
  // before anything is deleted, and by --dry-run.
  for (const std::string& run : unended_runs_on(pod, job.user)) {
    printer.note(fmt::format("pod '{}': your run {} is still running on it: deleting the TPU VM ends it (`tpurun kill "
                             "--run {}` stops it first)", pod.name, run, run));
  }
  if (o.dry_run) {
    fmt::print(ctx.out, "down --dry-run: pod '{}': {}; would run:\n", pod.name, there);
    for (const auto& argv : down_commands(facts, job.gcloud)) fmt::print(ctx.out, "  {}\n", shell_display(argv));
    return 0;
  }
  if (!o.yes && !confirm(fmt::format("tpurun: delete {}? ", there), ctx)) {
    throw UsageError(fmt::format("pod '{}': deleting {} needs --yes (or an answer on a terminal)", pod.name, there));
  }
  leave_down_intent(pod, job, ctx, printer);
  const std::string error = tear_down(job, facts, io);
  if (!error.empty()) {
    printer.note(fmt::format("pod '{}': down failed: {}", pod.name, error));
    return 1;
  }
  forget_placement(*pod.gcloud, ctx.env);
  forget_describe(job.gcloud, ctx.env);
  printer.note(fmt::format("pod '{}': deleted {}; nothing of it is left", pod.name, there));
  return 0;
}

std::optional<std::string> down_refused_now(const PodConfig& pod, Context& ctx) {
  DownJob job = down_job_for(pod, ctx.env, false);
  auto transport = ctx.make_transport(pod);
  DownIo io{ctx.processes, *transport, ctx.cancel, [](const std::string&) {}};
  const DownFacts facts = find_down_facts(job, pod.create ? pod.create->zones : std::vector<std::string>{}, io);
  if (!facts.describe_error.empty()) return "gcloud could not say what is there: " + facts.describe_error;
  if (nothing_left(facts)) return std::nullopt;
  if (auto why = down_refusal(facts, job.user, false)) {
    // down's "--force deletes it anyway" is `tpurun down --force` here: stage has no such flag.
    std::string text = *why;
    if (const auto at = text.find("--force"); at != std::string::npos) text.replace(at, 7, "`tpurun down --force`");
    return down_facts_text(facts, job.gcloud) + ": " + text;
  }
  return std::nullopt;
}

int run_down(const DownOptions& o, Context& ctx) {
  PodRequest request = ctx.pod_request;
  request.need_workers = false;
  return down_pod(load_pod(request, ctx.env, ctx.processes), o, ctx);
}

}  // namespace tpurun::cli
