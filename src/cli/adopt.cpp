// tpurun _adopt: the detached half of a stage on a network file system. Every
// pending list in the user's cache is linked into its object store; lists
// another adopter (or a stage) holds are left to it. Quiet unless something
// was given up: its output goes to <cache>/adopt/adopt.log.
#include "cli/adopt.hpp"

#include <fmt/format.h>

#include "tpurun/staging/adopt_pending.hpp"

namespace tpurun::cli {

CLI::App* register_adopt(CLI::App& app, AdoptOptions&) {
  CLI::App* cmd = app.add_subcommand("_adopt", "Link staged files into the object store (started by stage)");
  cmd->group("");  // hidden from --help
  return cmd;
}

int run_adopt(const AdoptOptions&, Context& ctx) {
  const AdoptReport report = adopt_pending(pending_adoptions_dir(ctx.env), AdoptBusy::skip, ctx.cancel);
  for (const std::string& error : report.errors) fmt::print("{}\n", error);
  if (ctx.verbosity > 0) {
    fmt::print("{} lists: {} files stored, {} kept as copies, {} gone; {} lists busy\n", report.lists, report.stored,
               report.kept, report.gone, report.busy);
  }
  return report.errors.empty() ? 0 : 1;
}

}  // namespace tpurun::cli
