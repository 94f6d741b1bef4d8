// tpurun stacks: every Python stack of a run on every worker at once, the
// workers that are alike grouped and the odd one out named; for a run that
// has ended, the captures its watcher saved before stopping it (docs/stacks.md).
#include "cli/stacks.hpp"

#include <fmt/format.h>

#include "cli/help_texts.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/runs/stacks/stacks.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/text.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun::cli {
namespace {

constexpr long long kMaxTimeoutMs = 60 * 1000;

bool has_ended(const std::string& log_dir) {
  const auto state = read_run_state(log_dir);
  return state && is_final(state->verdict);
}

// Without RUN: the newest of the user's runs still running, else the newest.
std::string default_run(Context& ctx) {
  const PodConfig pod = load_pod_records(ctx);
  if (pod.logs_root.empty()) return "last";
  for (const std::string& dir : list_run_dirs(pod.logs_root, local_user(ctx.env))) {
    if (!has_ended(dir)) return dir.substr(dir.rfind('/') + 1);
  }
  return "last";
}

int print_saved(const StacksOptions& o, const RunRecord& run, Context& ctx) {
  const std::vector<SavedCapture> saved = read_captures(run.log_dir);
  if (o.json) {
    nlohmann::json doc = {{"run_id", run.run_id}, {"ended", true}, {"captures", nlohmann::json::array()}};
    for (const SavedCapture& c : saved) {
      nlohmann::json one = stacks_to_json(run.run_id, c.stacks);
      one["reason"] = c.reason;
      one["taken_at"] = c.taken_at;
      one["dir"] = c.dir;
      doc["captures"].push_back(std::move(one));
    }
    print_json(ctx.out, doc);
  } else if (saved.empty()) {
    fmt::print(ctx.err, "tpurun: run {} has ended, and no stacks were saved for it (its watcher saves them "
                        "before it stops a stalled run, or the rest of a gang after a failure)\n", run.run_id);
  }
  for (const SavedCapture& c : saved) {
    if (o.json) break;
    fmt::print(ctx.out, "run {} has ended; stacks taken {} before the watcher stopped it ({}), in {}\n",
               run.run_id, c.taken_at, c.reason, c.dir);
    const std::string text = format_stacks_report(run.run_id, c.stacks);
    std::fwrite(text.data(), 1, text.size(), ctx.out);
  }
  return saved.empty() ? 1 : 0;
}

}  // namespace

CLI::App* register_stacks(CLI::App& app, StacksOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "stacks", "Every Python stack of a run on every worker at once; the workers alike grouped, the odd one named");
  cmd->add_option("run", o.run, "Run id (or a unique prefix, or 'last'; default: your newest running run)");
  add_target_options(*cmd, o.target);
  cmd->add_flag("--json", o.json, "Print one JSON document (schema: docs/stacks.md)");
  cmd->add_flag("-n,--dry-run", o.dry_run, "Print the run, its workers and what would be asked; connect to nothing");
  cmd->add_flag("--native", o.native, "Native frames too, by py-spy where it is on a worker's PATH");
  cmd->add_option("--timeout", o.timeout, "How long each process has to write its stacks (e.g. 2s, 500ms; at most 1m)")
      ->default_str("2s");
  cmd->footer(help::kStacks);
  return cmd;
}

int run_stacks(const StacksOptions& o, Context& ctx) {
  long long timeout_ms = 0;
  try {
    timeout_ms = parse_duration(o.timeout).count();
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--timeout {}: {}", o.timeout, e.what()));
  }
  if (timeout_ms < 100 || timeout_ms > kMaxTimeoutMs) {
    throw UsageError(fmt::format("--timeout {}: pick 100ms to 1m", o.timeout));
  }
  const RunTarget target = load_run_target(o.run.empty() ? default_run(ctx) : o.run, ctx);
  const RunRecord& run = target.run;
  const std::vector<Worker> workers = chosen_run_workers(run, o.target.workers);
  if (has_ended(run.log_dir) && !o.dry_run) return print_saved(o, run, ctx);

  StacksRequest request{run.run_id, workers_log_dir(run), timeout_ms, o.native, o.target.fanout};
  if (o.dry_run) {
    if (o.json) {
      nlohmann::json doc = {{"run_id", run.run_id}, {"dry_run", true}, {"workers", nlohmann::json::array()}};
      for (const Worker& w : workers) doc["workers"].push_back({{"worker", w.index}, {"host", w.host}});
      print_json(ctx.out, doc);
      return 0;
    }
    fmt::print(ctx.out, "would take the Python stacks of run {} on {}, as {} (your own processes of the run "
                        "only; each gets tpurun's signal once, or py-spy with --native):\n",
               run.run_id, count_of(workers.size(), "worker"), local_user(ctx.env));
    for (const Worker& w : workers) fmt::print(ctx.out, "  {}\n", w.display());
    return 0;
  }
  auto transport = ctx.make_transport(target.pod);
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  printer.progress(fmt::format("taking stacks on {}...", count_of(workers.size(), "worker")));
  const std::vector<WorkerStacks> stacks = take_stacks(workers, *transport, request, ctx.cancel);
  printer.clear_progress();
  const int code = stacks_exit_code(stacks, ctx.cancel.cancelled());
  if (o.json) {
    nlohmann::json doc = stacks_to_json(run.run_id, stacks);
    doc["exit_code"] = code;
    print_json(ctx.out, doc);
  } else {
    const std::string text = format_stacks_report(run.run_id, stacks);
    std::fwrite(text.data(), 1, text.size(), ctx.out);
    std::fflush(ctx.out);
  }
  return code;
}

}  // namespace tpurun::cli
