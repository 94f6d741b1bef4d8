// tpurun doctor: every problem between this host and a working run, per
// worker, each with its fix.
#include "cli/doctor.hpp"

#include <fmt/format.h>

#include "cli/help_texts.hpp"
#include "tpurun/doctor/doctor.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/ui/doctor_view.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun::cli {

CLI::App* register_doctor(CLI::App& app, DoctorOptions& o) {
  CLI::App* cmd = app.add_subcommand("doctor", "Check everything a run needs on every worker; each problem with its fix");
  add_target_options(*cmd, o.target);
  cmd->add_flag("--json", o.json, "Print {pod, workers, ok, problems: [{severity, check, workers, problem, fix}]}");
  cmd->footer(help::kDoctor);
  return cmd;
}

int run_doctor(const DoctorOptions& o, Context& ctx) {
  Target target;
  try {
    PodRequest request = ctx.pod_request;
    request.describe_fresh = !o.after_up;  // what gcloud says now, not a kept answer (up's is seconds old)
    target = select_workers(load_pod(request, ctx.env, ctx.processes), o.target.workers);
  } catch (const ConfigError&) {
    throw;  // the config itself is wrong: file:line says where
  } catch (const std::exception& e) {
    if (ctx.cancel.cancelled()) return interrupt_exit_code();  // Ctrl-C during describe: not a finding
    std::vector<Finding> cannot{{Finding::Severity::error, "gcloud", {}, e.what(), ""}};
    if (o.json) {
      print_json(ctx.out, findings_to_json(ctx.pod_request.pod.value_or(""), 0, cannot));
    } else {
      fmt::print(ctx.out, "{}", format_findings(cannot));
    }
    return 1;
  }
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  printer.progress(fmt::format("checking {}...", count_of(target.workers.size(), "worker")));
  DoctorProbe probe;
  const LocalFacts local = gather_local_facts(target.pod, ctx, probe, !o.after_up);
  auto transport = ctx.make_transport(target.pod);
  const auto workers = gather_worker_facts(target.workers, *transport, o.target.fanout, ctx.cancel, probe);
  remove_probe(probe);
  printer.clear_progress();
  if (ctx.cancel.cancelled()) return interrupt_exit_code();

  const std::vector<Finding> findings = judge(local, workers);
  if (o.json) {
    print_json(ctx.out, findings_to_json(target.pod.name, target.workers.size(), findings, workers));
  } else {
    fmt::print(ctx.out, "{}", format_doctor_report(target.pod.name, target.workers.size(), findings, workers));
  }
  return error_count(findings) ? 1 : 0;
}

}  // namespace tpurun::cli
