#include "cli/hostkeys.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/help_texts.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/transport/known_hosts.hpp"
#include "tpurun/ui/report.hpp"

namespace tpurun::cli {

CLI::App* register_hostkeys(CLI::App& app, HostKeysOptions& o) {
  CLI::App* cmd = app.add_subcommand("hostkeys", "Show (and --import) the workers' host keys gcloud has recorded");
  add_target_options(*cmd, o.target);
  cmd->add_flag("--import", o.import, "Record the keys once: run gcloud's tpu-vm ssh on the workers (--command=true)");
  cmd->add_flag("--dry-run", o.dry_run, "With --import: print the gcloud command; run nothing");
  cmd->add_flag("--json", o.json, "Print {pod, file, workers: [{worker, host, alias, recorded, line}]}");
  cmd->footer(help::kHostkeys);
  return cmd;
}

int run_hostkeys(const HostKeysOptions& o, Context& ctx) {
  if (o.dry_run && !o.import) throw UsageError("--dry-run goes with --import");
  Target target = resolve_target(o.target, ctx);
  if (!target.pod.slices.empty()) {
    std::vector<std::string> slices;
    for (const Slice& slice : target.pod.slices) slices.push_back(slice.pod);
    throw UsageError(fmt::format("pod '{}' is made of slices: run tpurun hostkeys --pod SLICE for each of {}",
                                 target.pod.name, fmt::join(slices, ", ")));
  }
  if (!target.pod.gcloud) {
    throw UsageError(fmt::format(
        "pod '{}' is not a gcloud pod: its host keys are in known_hosts under their addresses "
        "(host_key_policy accept-new records them on first use; or ssh-keyscan HOST >> ~/.ssh/known_hosts)",
        target.pod.name));
  }
  if (o.import) {
    const auto argv = gcloud_import_argv(*target.pod.gcloud, o.target.workers);
    if (o.dry_run) {
      fmt::print(ctx.out, "dry run: would run\n  {}\n", fmt::join(argv, " "));
      return 0;
    }
    fmt::print(ctx.err, "tpurun: running {}\n", fmt::join(argv, " "));
    const ProcessResult result = ctx.processes.run(argv);
    if (result.exit_code != 0) {
      fmt::print(ctx.err, "tpurun: error: gcloud failed (exit {}):\n{}", result.exit_code, result.err);
      return 255;
    }
  }
  const std::string& file = target.pod.ssh.alias_known_hosts;
  int missing = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (const Worker& w : target.workers) {
    auto lines = find_alias_lines(file, w.host_key_alias);
    rows.push_back({{"worker", w.index},
                    {"host", w.host},
                    {"alias", w.host_key_alias},
                    {"recorded", !lines.empty()},
                    {"line", lines.empty() ? nlohmann::json(nullptr) : nlohmann::json(lines[0].line)}});
    if (o.json) {
      missing += lines.empty() ? 1 : 0;
    } else if (lines.empty()) {
      ++missing;
      fmt::print(ctx.out, "{:<4} {:<15} {:<28} not recorded\n", w.label(), w.host, w.host_key_alias);
    } else {
      fmt::print(ctx.out, "{:<4} {:<15} {:<28} recorded ({}:{})\n", w.label(), w.host, w.host_key_alias, file,
                 lines[0].line);
    }
  }
  if (o.json) {
    print_json(ctx.out, {{"pod", target.pod.name}, {"file", file}, {"workers", rows}});
  } else if (missing > 0) {
    fmt::print(ctx.err, "tpurun: {} of {} workers have no key recorded by gcloud; `tpurun hostkeys --import` "
                        "records them\n",
               missing, target.workers.size());
  }
  return missing > 0 ? 1 : 0;
}

}  // namespace tpurun::cli
