// tpurun tensorboard: TensorBoard on the dev VM over some runs' log dirs,
// named by their tags, plus the ssh line that brings it to a laptop.
#include "cli/tensorboard.hpp"

#include <fmt/format.h>

#include "cli/help_texts.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/record/tensorboard_spec.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/local_programs.hpp"

namespace tpurun::cli {
namespace {

constexpr const char* kInstallHint =
    "install it on this host with `pip install tensorboard` (it lands in ~/.local/bin: put that on PATH)";

}  // namespace

CLI::App* register_tensorboard(CLI::App& app, TensorBoardOptions& o) {
  CLI::App* cmd =
      app.add_subcommand("tensorboard", "Start TensorBoard on this host over some runs, named by their tags");
  cmd->add_option("runs", o.runs, "Run ids (or unique prefixes, or 'last'/'latest')")->required();
  cmd->add_option("-p,--port", o.port, "Port TensorBoard serves on, on this host")->default_str("6006");
  cmd->add_option("--host", o.host, "This host's name in the printed ssh line (default: hostname -f)");
  cmd->add_flag("--bind-all", o.bind_all,
                "Serve on every network interface (default: localhost only, reached through ssh -L)");
  cmd->add_flag("-n,--dry-run", o.dry_run, "Print the tensorboard command and the ssh line; start nothing");
  cmd->add_flag("--json", o.json, "With --dry-run: print the command, the runs and the ssh line as JSON");
  cmd->footer(help::kTensorboard);
  return cmd;
}

int run_tensorboard(const TensorBoardOptions& o, Context& ctx) {
  if (o.port < 1 || o.port > 65535) throw UsageError(fmt::format("--port {}: pick a port in 1-65535", o.port));
  if (o.json && !o.dry_run) throw UsageError("--json goes with --dry-run (TensorBoard itself prints no JSON)");
  PodConfig pod = load_pod_records(ctx);
  if (pod.logs_root.empty()) throw UsageError(fmt::format("pod '{}' has no logs_root; see docs/config.md", pod.name));
  const std::string user = local_user(ctx.env);
  std::vector<TensorBoardRun> runs = tensorboard_runs(o.runs, pod.logs_root, user);
  std::string spec;
  try {
    spec = logdir_spec(runs);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }

  std::optional<std::string> program = find_on_path("tensorboard", ctx.env);
  std::vector<std::string> argv{"tensorboard", "--logdir_spec=" + spec, fmt::format("--port={}", o.port)};
  argv.push_back(o.bind_all ? "--bind_all" : "--host=127.0.0.1");
  const std::string ssh = fmt::format("ssh -L {0}:localhost:{0} {1}@{2}", o.port, user,
                                      o.host.empty() ? host_fqdn() : o.host);
  const std::string url = fmt::format("http://localhost:{}", o.port);

  if (o.dry_run) {
    if (o.json) {
      nlohmann::json doc{{"command", argv}, {"port", o.port}, {"ssh", ssh}, {"url", url},
                         {"tensorboard", program ? nlohmann::json(*program) : nlohmann::json(nullptr)}};
      doc["runs"] = nlohmann::json::array();
      for (const TensorBoardRun& r : runs) {
        doc["runs"].push_back({{"run_id", r.run_id}, {"name", r.name}, {"path", r.path}});
      }
      print_json(ctx.out, doc);
      return 0;
    }
    fmt::print(ctx.out, "{}\n# then, on your laptop: {}\n# and open {}\n", shell_display(argv), ssh, url);
    if (!program) fmt::print(ctx.err, "tpurun: note: tensorboard is not on PATH; {}\n", kInstallHint);
    return 0;
  }
  if (!program) throw std::runtime_error(fmt::format("tensorboard is not on PATH; {}", kInstallHint));
  if (std::string problem = port_problem(o.port, o.bind_all); !problem.empty()) {
    throw UsageError(fmt::format("{}; pick another with --port N", problem));
  }
  for (const TensorBoardRun& r : runs) fmt::print(ctx.out, "{:<24} {}\n", r.name, r.path);
  fmt::print(ctx.out, "TensorBoard on port {} of this host. From your laptop:\n  {}\n", o.port, ssh);
  fmt::print(ctx.out, "then open {}  (Ctrl-C here stops it)\n", url);
  std::string failure = exec_program(*program, argv);
  throw std::runtime_error(failure);
}

}  // namespace tpurun::cli
