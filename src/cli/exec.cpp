// tpurun exec: run one command on every worker, in parallel, over SSH.
#include "cli/exec.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "cli/help_texts.hpp"
#include "tpurun/board/claim_check.hpp"
#include "tpurun/board/pod_pick.hpp"
#include "tpurun/fanout/gather.hpp"
#include "tpurun/fanout/live_output.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun::cli {
namespace {

std::string read_script(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("--script {}: cannot read the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void print_dry_run(const Target& target, const RemoteCommand& command, int fanout, std::FILE* out) {
  fmt::print(out, "dry run: nothing is connected to or run.\n");
  fmt::print(out, "pod '{}': {} of {} workers, at most {} at once\n", target.pod.name,
             target.workers.size(), target.pod.workers.size(), fanout);
  for (const Worker& w : target.workers) fmt::print(out, "  {}\n", w.display());
  fmt::print(out, "remote command: {}\n", command.command_line);
  if (!command.stdin_data.empty()) fmt::print(out, "stdin: {} bytes of script\n", command.stdin_data.size());
}

void print_gathered(const std::vector<WorkerOutcome>& outcomes, std::FILE* out, std::FILE* err) {
  for (const OutputGroup& group : group_identical_outputs(outcomes)) {
    fmt::print(out, "---------------\n{} ({})\n---------------\n", compact_worker_set(group.workers),
               group.workers.size());
    fmt::print(out, "{}", group.out);
    if (!group.out.empty() && group.out.back() != '\n') fmt::print(out, "\n");
    if (!group.err.empty()) {
      std::fflush(out);
      fmt::print(err, "{}", group.err);
      if (group.err.back() != '\n') fmt::print(err, "\n");
    }
  }
}

}  // namespace

CLI::App* register_exec(CLI::App& app, ExecOptions& o) {
  CLI::App* cmd = app.add_subcommand("exec", "Run a command on every worker of the pod, in parallel");
  add_target_options(*cmd, o.target);
  cmd->add_option("--script", o.script,
                  "Send this local script to `bash -s` on every worker (args after -- go to the script)");
  cmd->add_flag("--gather", o.gather, "Print identical outputs once, with the workers that produced them");
  cmd->add_flag("--json", o.json, "Print one JSON record per worker instead of streaming output");
  cmd->add_flag("--raw,--no-collapse", o.raw,
                "Stream every worker's lines as they come, without collapsing identical lines");
  cmd->add_flag("--ignore-claim", o.ignore_claim, "Run on a pod that another user has claimed (tpurun claims)");
  cmd->add_option("--wait", o.wait_pod,
                  "With --pod auto or --pod 'glob*': when no pod is free, wait for one, scanning again every "
                  "INTERVAL (default 30s) and saying what it waits for; Ctrl-C stops")
      ->expected(0, 1)
      ->type_name("[INTERVAL]");
  cmd->add_flag("--dry-run", o.dry_run, "Show the workers and the exact remote command; connect to nothing");
  cmd->add_option("--timeout", o.timeout,
                  "Stop the command on a worker that runs longer than this (e.g. 90s, 10m): SIGTERM, then "
                  "SIGKILL; that worker reports a timeout")
      ->allow_extra_args(false);
  cmd->add_option("command", o.argv, "The command and its arguments, after --; each arrives verbatim");
  cmd->footer(help::kExec);
  return cmd;
}

RemoteCommand build_exec_command(const ExecOptions& o, const std::string& script_text) {
  if (!o.script.empty()) {
    std::string line = "exec bash -s";
    if (!o.argv.empty()) line += " -- " + shell_join(o.argv);
    return {line, script_text};
  }
  return {"exec " + shell_join(o.argv), ""};
}

int run_exec(const ExecOptions& o, Context& ctx) {
  if (o.argv.empty() && o.script.empty()) {
    throw UsageError("nothing to run: give a command after --, or --script FILE (see tpurun exec --help)");
  }
  if (o.raw && (o.json || o.gather)) {
    throw UsageError(fmt::format("--raw changes only streamed output, and {} never collapses lines: drop --raw",
                                 o.json ? "--json" : "--gather"));
  }
  pick_pod(ctx, o.ignore_claim, parse_pod_wait(o.wait_pod, o.dry_run));  // --pod auto / --pod 'glob*' [--wait]
  Target target = resolve_target(o.target, ctx);
  respect_claims(target.pod, o.ignore_claim, ctx);
  const std::string script_text = o.script.empty() ? "" : read_script(o.script);
  RemoteCommand command = build_exec_command(o, script_text);
  if (!o.timeout.empty()) {
    command.timeout_ms = parse_duration(o.timeout).count();
    if (command.timeout_ms <= 0) throw UsageError(fmt::format("--timeout {}: must be more than 0", o.timeout));
  }
  if (o.dry_run) {
    print_dry_run(target, command, o.target.fanout, ctx.out);
    return 0;
  }

  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  FanoutPlan plan;
  plan.workers = target.workers;
  plan.command = command;
  plan.fanout = o.target.fanout;
  plan.capture = o.json || o.gather;
  auto transport = ctx.make_transport(target.pod);
  const auto outcomes = run_with_live_output(plan, *transport, printer, !o.raw, ctx.cancel);

  const int code = aggregate_exit_code(outcomes);
  if (o.json) {
    nlohmann::json doc{{"pod", target.pod.name}, {"exit_code", code}, {"workers", nlohmann::json::array()}};
    for (const WorkerOutcome& outcome : outcomes) doc["workers"].push_back(outcome_to_json(outcome));
    print_json(ctx.out, doc);
  } else if (o.gather) {
    print_gathered(outcomes, ctx.out, ctx.err);
  }
  print_failure_summary(printer, outcomes);
  return code;
}

}  // namespace tpurun::cli
