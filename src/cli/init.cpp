// tpurun init: a first tpurun.json from gcloud's TPU VMs and this host's NFS mount.
#include "cli/init.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "cli/help_texts.hpp"
#include "tpurun/pod/config_init.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/util/atomic_file.hpp"

namespace tpurun::cli {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// `gcloud config get-value KEY`: "" when unset (gcloud then prints "(unset)" on stderr).
std::string gcloud_value(const std::string& key, ProcessRunner& processes) {
  ProcessResult r = processes.run({"gcloud", "config", "get-value", key});
  return r.exit_code == 0 ? trimmed(r.out) : "";
}

}  // namespace

CLI::App* register_init(CLI::App& app, InitOptions& o) {
  CLI::App* cmd = app.add_subcommand("init", "Write a first tpurun.json from gcloud's TPU VMs and this host's NFS mount");
  cmd->add_option("--zone", o.zone, "Zone to list (default: gcloud config get-value compute/zone)");
  cmd->add_option("--project", o.project, "Project to list (default: gcloud's configured project)");
  cmd->add_option("--shared", o.shared,
                  "The shared mount every worker sees (default: the first NFS mount, findmnt -t nfs,nfs4; none: a pod with no shared mount)");
  cmd->add_option("-o,--output", o.output, "Where to write it")->default_str("tpurun.json");
  cmd->add_flag("--force", o.force, "Overwrite an existing file");
  cmd->add_flag("--dry-run", o.dry_run, "Print the config; write nothing");
  cmd->footer(help::kInit);
  return cmd;
}

int run_init(const InitOptions& o, Context& ctx) {
  const bool exists = std::filesystem::exists(o.output);
  if (exists && !o.force && !o.dry_run) {
    throw UsageError(fmt::format("{} exists: pass --force to overwrite it, or --dry-run to see what would be written",
                                 o.output));
  }
  InitChoices c;
  c.zone = o.zone.empty() ? gcloud_value("compute/zone", ctx.processes) : o.zone;
  c.project = o.project;
  if (c.zone.empty()) {
    throw UsageError("no zone: pass --zone ZONE (gcloud config get-value compute/zone is unset)");
  }
  c.shared = o.shared;
  if (c.shared.empty()) {
    ProcessResult mounts = ctx.processes.run({"findmnt", "-J", "-t", "nfs,nfs4", "-o", "TARGET"});
    auto targets = parse_findmnt_targets(mounts.out);
    // None: a pod with no shared mount (code and logs on each worker's disk).
    if (!targets.empty()) {
      c.shared = targets.front();
      c.other_mounts.assign(targets.begin() + 1, targets.end());
    }
  }
  std::vector<std::string> argv = {"gcloud", "compute", "tpus", "tpu-vm", "list", "--zone", c.zone, "--format=json"};
  if (!c.project.empty()) argv.insert(argv.end() - 1, {"--project", c.project});
  ProcessResult listed = ctx.processes.run(argv);
  if (listed.exit_code != 0) {
    throw std::runtime_error(fmt::format("`{}` failed (exit {}):\n{}", fmt::join(argv, " "), listed.exit_code,
                                         trimmed(listed.err)));
  }
  c.tpus = parse_tpu_list_nodes(listed.out);
  if (c.tpus.empty()) {
    throw std::runtime_error(fmt::format("gcloud lists no TPU VM in zone {}{}: create one, or pick another zone",
                                         c.zone, c.project.empty() ? "" : " of project " + c.project));
  }
  const std::string text = init_config_text(c);
  if (o.dry_run) {
    fmt::print(ctx.out, "{}", text);
    return 0;
  }
  write_file_atomic(o.output, text);
  std::vector<std::string> names;
  for (const TpuNode& t : c.tpus) names.push_back(t.name);
  fmt::print(ctx.err, "tpurun: wrote {} with {} pod{} ({}), {}; next: tpurun doctor\n", o.output, names.size(),
             names.size() == 1 ? "" : "s", fmt::join(names, ", "),
             c.shared.empty() ? "no shared mount (code and logs on each worker's own disk, under ~/.tpurun)"
                              : "roots under " + c.shared + "/tpurun");
  return 0;
}

}  // namespace tpurun::cli
