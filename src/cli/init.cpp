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
  c.zone = o.zone;
  c.project = o.project;
  c.shared = o.shared;
  discover_init_choices(c, ctx.processes);
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
