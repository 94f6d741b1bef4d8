// tpurun status: who holds the TPU on every worker, at a glance.
#include "cli/status.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "cli/help_texts.hpp"
#include "tpurun/board/board_scan.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/tpu/holders.hpp"
#include "tpurun/ui/board_view.hpp"
#include "tpurun/ui/board_watch.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/ui/status_table.hpp"
#include "tpurun/ui/tpu_view.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun::cli {
namespace {

// status --all: every pod's line printed as the pod answers.
int run_status_all(const StatusOptions& o, Context& ctx) {
  if (o.target.workers != "all") throw UsageError("--all scans every worker of every pod: drop --worker");
  if (o.watch) return run_board_watch({*o.watch, o.json, o.target.fanout}, ctx);
  BoardScanner scanner(ctx, o.target.fanout, false);
  const auto now = WallClock::now();
  auto entries = scanner.scan(ctx.cancel, now, [&](size_t, const BoardEntry& e) {
    for (const std::string& w : e.warnings) fmt::print(ctx.err, "tpurun: warning: {}\n", w);
    if (!o.json) fmt::print(ctx.out, "{}\n", format_board_line(e, now, scanner.name_width()));
    std::fflush(ctx.out);
  });
  if (o.json) print_json(ctx.out, board_to_json(entries, now));
  return board_exit_code(entries, ctx.cancel);
}

// A gcloud pod whose TPU VM is not READY (or is gone) has no workers to scan:
// what gcloud reported is the status.
int print_unavailable(const TpuUnavailable& e, bool json, Context& ctx) {
  const TpuNode& node = e.node();
  if (json) {
    auto text_or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
    print_json(ctx.out, {{"pod", ctx.pod_request.pod.value_or("")},
                         {"exit_code", 255},
                         {"gcloud_state", node.state},
                         {"gcloud_health", text_or_null(node.health)},
                         {"gcloud_health_description", text_or_null(node.health_description)},
                         {"error", e.what()},
                         {"workers", nlohmann::json::array()}});
  } else {
    fmt::print(ctx.out, "{}\n", e.what());
  }
  return 255;
}

}  // namespace

CLI::App* register_status(CLI::App& app, StatusOptions& o) {
  CLI::App* cmd = app.add_subcommand("status", "Show who holds the TPU on every worker");
  add_target_options(*cmd, o.target);
  cmd->add_flag("--json", o.json, "Print one JSON record per worker (schema: docs/ownership.md)");
  cmd->add_flag("--all", o.all,
                "The team's board: every pod in the config at once, one line each with its state "
                "(free, busy, partial, unreachable, error), holders and claim (docs/board.md)");
  cmd->add_option("--watch", o.watch,
                  "With --all: refresh the board every INTERVAL (default 5s; e.g. 2, 500ms, 1m) until q or "
                  "Ctrl-C, redrawn in place on a terminal; otherwise a block per refresh after a timestamp "
                  "line, or with --json one JSON document per line")
      ->expected(0, 1)
      ->type_name("[INTERVAL]");
  cmd->footer(help::kStatus);
  return cmd;
}

int run_status(const StatusOptions& o, Context& ctx) {
  if (o.watch && !o.all) throw UsageError("--watch refreshes the board of every pod: use it with --all");
  if (o.all) return run_status_all(o, ctx);
  Target target;
  try {
    PodRequest request = ctx.pod_request;
    request.describe_fresh = true;  // status is where a VM's state is looked at: what gcloud says now
    target = select_workers(load_pod(request, ctx.env, ctx.processes), o.target.workers);
  } catch (const TpuUnavailable& e) {
    return print_unavailable(e, o.json, ctx);
  }
  auto transport = ctx.make_transport(target.pod);
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  printer.progress(fmt::format("scanning {}...", count_of(target.workers.size(), "worker")));
  auto results =
      scan_workers(target.workers, *transport, o.target.fanout, ctx.cancel, target.pod.device_globs);
  printer.clear_progress();

  std::vector<TpuState> states;
  for (const WorkerScanResult& r : results) states.push_back(r.state);
  const int code = ctx.cancel.cancelled() ? 130 : tpu_exit_code(states);
  if (o.json) {
    nlohmann::json doc{{"pod", target.pod.name}, {"exit_code", code}, {"workers", nlohmann::json::array()}};
    for (const WorkerScanResult& r : results) doc["workers"].push_back(scan_result_to_json(r));
    print_json(ctx.out, doc);
  } else {
    std::string table = format_status_table(target.pod.name, results, ctx.out_is_tty);
    std::fwrite(table.data(), 1, table.size(), ctx.out);
    std::fflush(ctx.out);
  }
  return code;
}

}  // namespace tpurun::cli
