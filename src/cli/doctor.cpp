// tpurun doctor: every problem between this host and a working run, per
// worker, each with its fix.
#include "cli/doctor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/help_texts.hpp"
#include "tpurun/doctor/doctor.hpp"
#include "tpurun/fanout/gather.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun::cli {
namespace {

const char* severity_name(Finding::Severity s) { return s == Finding::Severity::error ? "error" : "warning"; }

std::string where(const Finding& f) { return f.workers.empty() ? "here" : compact_worker_set(f.workers); }

nlohmann::json findings_json(const std::string& pod, size_t workers, const std::vector<Finding>& findings) {
  nlohmann::json problems = nlohmann::json::array();
  int errors = 0;
  for (const Finding& f : findings) {
    errors += f.severity == Finding::Severity::error ? 1 : 0;
    problems.push_back({{"severity", severity_name(f.severity)},
                        {"check", f.check},
                        {"workers", f.workers},
                        {"problem", f.problem},
                        {"fix", f.fix}});
  }
  return {{"pod", pod}, {"workers", workers}, {"ok", errors == 0}, {"problems", problems}};
}

void print_findings(const std::vector<Finding>& findings, std::FILE* out) {
  for (const Finding& f : findings) {
    fmt::print(out, "{:<7} {}: {}\n", severity_name(f.severity), where(f), f.problem);
    if (!f.fix.empty()) {
      std::string fix = f.fix;
      for (size_t at = fix.find('\n'); at != std::string::npos; at = fix.find('\n', at + 1)) fix.insert(at + 1, "        ");
      fmt::print(out, "        fix: {}\n", fix);
    }
  }
}

}  // namespace

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
    request.describe_fresh = true;  // what gcloud says now, not a kept answer
    target = select_workers(load_pod(request, ctx.env, ctx.processes), o.target.workers);
  } catch (const ConfigError&) {
    throw;  // the config itself is wrong: file:line says where
  } catch (const std::exception& e) {
    std::vector<Finding> cannot{{Finding::Severity::error, "gcloud", {}, e.what(), ""}};
    if (o.json) {
      print_json(ctx.out, findings_json(ctx.pod_request.pod.value_or(""), 0, cannot));
    } else {
      print_findings(cannot, ctx.out);
    }
    return 1;
  }
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  printer.progress(fmt::format("checking {}...", count_of(target.workers.size(), "worker")));
  DoctorProbe probe;
  const LocalFacts local = gather_local_facts(target.pod, ctx, probe);
  auto transport = ctx.make_transport(target.pod);
  const auto workers = gather_worker_facts(target.workers, *transport, o.target.fanout, ctx.cancel, probe);
  remove_probe(probe);
  printer.clear_progress();
  if (ctx.cancel.cancelled()) return 130;

  const std::vector<Finding> findings = judge(local, workers);
  size_t errors = 0;
  for (const Finding& f : findings) errors += f.severity == Finding::Severity::error ? 1 : 0;
  if (o.json) {
    print_json(ctx.out, findings_json(target.pod.name, target.workers.size(), findings));
    return errors ? 1 : 0;
  }
  fmt::print(ctx.out, "doctor: pod '{}', {} worker{}\n", target.pod.name, target.workers.size(),
             target.workers.size() == 1 ? "" : "s");
  print_findings(findings, ctx.out);
  fmt::print(ctx.out, "{}\n",
             findings.empty() ? "no problems found: reach, uid, mount, sudo, devices, tpu, clock, tmp and versions "
                                "are fine on every worker"
                              : fmt::format("{} error{}, {} warning{}", errors, errors == 1 ? "" : "s",
                                            findings.size() - errors, findings.size() - errors == 1 ? "" : "s"));
  return errors ? 1 : 0;
}

}  // namespace tpurun::cli
