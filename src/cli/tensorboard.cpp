// tpurun tensorboard: TensorBoard on the dev VM over some runs' log dirs,
// named by their tags, plus the ssh line that brings it to a laptop.
#include "cli/tensorboard.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <set>

#include "cli/help_texts.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/record/profile_layout.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/tensorboard_spec.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/local_programs.hpp"

namespace tpurun::cli {
namespace {

constexpr const char* kInstallHint =
    "install it on this host with `pip install tensorboard` (it lands in ~/.local/bin: put that on PATH)";

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The command as one would type it: words quoted only when the shell needs it.
std::string readable_command(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) {
    bool plain = !arg.empty() && arg.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                       "0123456789_./:=,@%+-") == std::string::npos;
    line += (line.empty() ? "" : " ") + (plain ? arg : shell_quote(arg));
  }
  return line;
}

// The runs, in the order given, each once; <log dir>/tb when the job made one
// and the run has no profiles (`tpurun profile` writes them under the log
// dir's plugins/profile, where the Profile tab looks; tb/ is then found as a
// sub-run).
std::vector<TensorBoardRun> resolve_runs(const std::vector<std::string>& wanted, const PodConfig& pod,
                                         const std::string& user) {
  std::vector<RunRecord> records;
  std::set<std::string> seen;
  for (const std::string& run : wanted) {
    RunRecord record = read_run_record(find_run_dir(pod.logs_root, user, run));
    if (seen.insert(record.run_id).second) records.push_back(std::move(record));
  }
  std::vector<std::string> names = tensorboard_names(records);
  std::vector<TensorBoardRun> runs;
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string tb = records[i].log_dir + "/tb";
    const bool profiled = !profile_sessions(records[i].log_dir).empty();
    runs.push_back({records[i].run_id, names[i], is_dir(tb) && !profiled ? tb : records[i].log_dir});
  }
  return runs;
}

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
  std::vector<TensorBoardRun> runs = resolve_runs(o.runs, pod, user);
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
    fmt::print(ctx.out, "{}\n# then, on your laptop: {}\n# and open {}\n", readable_command(argv), ssh, url);
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
