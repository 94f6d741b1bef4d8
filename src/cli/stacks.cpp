// tpurun stacks: every Python stack of a run on every worker at once, the
// workers that are alike grouped and the odd one out named; for a run that
// has ended, the captures its watcher saved before stopping it (docs/stacks.md).
#include "cli/stacks.hpp"

#include <fmt/format.h>

#include "cli/help_texts.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/runs/stacks/stacks.hpp"
#include "tpurun/runs/watcher/recent_runs.hpp"
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

// Without RUN: the newest of the user's runs whose watcher is alive, as
// `runs` sees them; "" when none is (a run whose watcher died is no default).
std::string running_run(Context& ctx) {
  const PodConfig pod = load_pod_records(ctx);
  if (pod.logs_root.empty()) return "";
  for (const RunView& view : recent_runs(pod.logs_root, local_user(ctx.env), 20, [](const std::string&) {})) {
    if (view.watched) return view.record.run_id;
  }
  return "";
}

StacksRequest stacks_request(const StacksOptions& o, long long timeout_ms, const std::string& run_id,
                             const std::string& log_dir, const std::vector<std::string>& device_globs) {
  StacksRequest request;
  request.run_id = run_id;
  request.workers_log_dir = log_dir;
  request.timeout_ms = timeout_ms;
  request.native = o.native;
  request.fanout = o.target.fanout;
  request.device_globs = device_globs;
  return request;
}

// What is asked of which workers: a run's processes, or (run_id empty) the
// user's own processes that hold the TPU.
int take_and_print(const StacksOptions& o, const PodConfig& pod, const std::vector<Worker>& workers,
                   const StacksRequest& request, Context& ctx) {
  const std::string what = request.run_id.empty() ? "your processes that hold the TPU" : "run " + request.run_id;
  if (o.dry_run) {
    if (o.json) {
      nlohmann::json doc = {{"run_id", request.run_id}, {"dry_run", true}, {"workers", nlohmann::json::array()}};
      if (request.run_id.empty()) doc["run_id"] = nullptr;
      for (const Worker& w : workers) doc["workers"].push_back({{"worker", w.index}, {"host", w.host}});
      print_json(ctx.out, doc);
      return 0;
    }
    fmt::print(ctx.out, "would take the Python stacks of {} on {}, as {} (your own processes {}only; each gets "
                        "tpurun's signal once, or py-spy with --native):\n",
               what, count_of(workers.size(), "worker"), local_user(ctx.env),
               request.run_id.empty() ? "" : "of the run ");
    for (const Worker& w : workers) fmt::print(ctx.out, "  {}\n", w.display());
    return 0;
  }
  auto transport = ctx.make_transport(pod);
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  printer.progress(fmt::format("taking stacks on {}...", count_of(workers.size(), "worker")));
  const std::vector<WorkerStacks> stacks = take_stacks(workers, *transport, request, ctx.cancel);
  printer.clear_progress();
  const int code = stacks_exit_code(stacks, ctx.cancel.cancelled());
  if (o.json) {
    nlohmann::json doc = stacks_to_json(request.run_id, stacks);
    if (request.run_id.empty()) doc["run_id"] = nullptr;
    doc["exit_code"] = code;
    print_json(ctx.out, doc);
  } else {
    const std::string text = format_stacks_report(request.run_id, stacks);
    std::fwrite(text.data(), 1, text.size(), ctx.out);
    std::fflush(ctx.out);
  }
  return code;
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
  cmd->add_option("run", o.run, "Run id (or a unique prefix, or 'last'; default: your newest running run, else your processes that hold the TPU)");
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
  std::string run_id = o.run;
  if (run_id.empty() && (run_id = running_run(ctx)).empty()) {
    // No run of yours is running: your processes that hold the TPU, however
    // they were started (those of a run get their stacks; the rest, why not).
    const Target target = resolve_target(o.target, ctx);
    return take_and_print(o, target.pod, target.workers, stacks_request(o, timeout_ms, "", "", target.pod.device_globs),
                          ctx);
  }
  const RunTarget target = load_run_target(run_id, ctx);
  const RunRecord& run = target.run;
  const std::vector<Worker> workers = chosen_run_workers(run, o.target.workers);
  if (has_ended(run.log_dir) && !o.dry_run) return print_saved(o, run, ctx);
  return take_and_print(o, target.pod, workers,
                        stacks_request(o, timeout_ms, run.run_id, workers_log_dir(run), {}), ctx);
}

}  // namespace tpurun::cli
