// tpurun top: how busy every chip of the pod is, with who holds it.
#include "cli/top.hpp"

#include <fmt/format.h>

#include "cli/help_texts.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/tpu/top_look.hpp"
#include "tpurun/transport/kept_connections.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/ui/top_view.hpp"
#include "tpurun/ui/top_watch.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun::cli {

CLI::App* register_top(CLI::App& app, TopOptions& o) {
  CLI::App* cmd = app.add_subcommand("top", "Show HBM use and duty cycle of every chip, with who holds it");
  add_target_options(*cmd, o.target);
  cmd->add_flag("--json", o.json, "Print one JSON document (schema: docs/top.md)");
  cmd->add_option("--watch", o.watch,
                  "Refresh every INTERVAL (default 5s; e.g. 2, 500ms, 1m) until q or Ctrl-C, redrawn in place "
                  "on a terminal; otherwise a block per refresh after a timestamp line, or with --json one JSON "
                  "document per line")
      ->expected(0, 1)
      ->type_name("[INTERVAL]");
  cmd->footer(help::kTop);
  return cmd;
}

int run_top(const TopOptions& o, Context& ctx) {
  const Target target = resolve_target(o.target, ctx);
  TopRequest request;
  request.device_globs = target.pod.device_globs;
  request.fanout = o.target.fanout;
  if (o.watch) {
    KeptConnections kept(ctx.make_transport(target.pod));
    return run_top_watch({*o.watch, o.json, target.pod.name}, ctx, [&](const CancelToken& cancel) {
      return look_at_workers(target.workers, kept, request, cancel);
    });
  }
  auto transport = ctx.make_transport(target.pod);
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  printer.progress(fmt::format("looking at {}...", count_of(target.workers.size(), "worker")));
  auto looks = look_at_workers(target.workers, *transport, request, ctx.cancel);
  printer.clear_progress();
  const int code = top_exit_code(looks, ctx.cancel.cancelled());
  if (o.json) {
    nlohmann::json doc = top_to_json(target.pod.name, looks);
    doc["exit_code"] = code;
    print_json(ctx.out, doc);
  } else {
    const std::string text = format_top(target.pod.name, looks);
    std::fwrite(text.data(), 1, text.size(), ctx.out);
    std::fflush(ctx.out);
  }
  return code;
}

}  // namespace tpurun::cli
