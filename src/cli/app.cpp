#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "cli/adopt.hpp"
#include "cli/agent.hpp"
#include "cli/claim.hpp"
#include "cli/doctor.hpp"
#include "cli/down.hpp"
#include "cli/exec.hpp"
#include "cli/gc.hpp"
#include "cli/help_texts.hpp"
#include "cli/hostkeys.hpp"
#include "cli/init.hpp"
#include "cli/kill.hpp"
#include "cli/logs.hpp"
#include "cli/runs.hpp"
#include "cli/stacks.hpp"
#include "cli/stage.hpp"
#include "cli/status.hpp"
#include "cli/tensorboard.hpp"
#include "cli/profile.hpp"
#include "cli/top.hpp"
#include "cli/up.hpp"
#include "cli/watcher.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/record/recorded_pod.hpp"
#include "tpurun/transport/context.hpp"
#include "tpurun/transport/real_transport.hpp"
#include "tpurun/ui/first_use.hpp"
#include "tpurun/util/diagnostics.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/suggest.hpp"
#include "tpurun/util/version.hpp"

namespace tpurun::cli {
namespace {

// Everything after the first "--" is the job's command, verbatim: CLI11 2.1
// reads an option of optional arity (stage --wait) followed by "--" as if
// the "--" were its own, and then parses the command's flags as tpurun's.
// So argv is split here, and the command goes to the subcommand's "command".
void parse_with_command(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> before, command;
  bool after = false;
  for (int i = 1; i < argc; ++i) {
    if (!after && std::string(argv[i]) == "--") {
      after = true;
    } else {
      (after ? command : before).push_back(argv[i]);
    }
  }
  std::reverse(before.begin(), before.end());  // CLI11 takes them last first
  app.parse(before);
  if (!after) return;
  for (CLI::App* sub : app.get_subcommands()) {
    if (CLI::Option* option = sub->get_option_no_throw("command")) {
      for (const std::string& word : command) option->add_result(word);
      option->run_callback();
      return;
    }
  }
  if (!command.empty()) {
    throw UsageError(fmt::format("unexpected arguments after --: {} (only stage and exec take a command)",
                                 fmt::join(command, " ")));
  }
}

// Unknown subcommands get a hint before CLI11's generic message.
void check_subcommand(int argc, char** argv, const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--config" || arg == "--pod") {
      ++i;  // skip the option's value
      continue;
    }
    if (arg.rfind("-", 0) == 0) continue;
    if (std::find(names.begin(), names.end(), arg) == names.end()) {
      std::vector<std::string> shown;
      for (const std::string& n : names) {
        if (n.rfind('_', 0) != 0) shown.push_back(n);
      }
      throw UsageError(fmt::format("unknown command '{}'{}; commands: {}", arg, did_you_mean(arg, shown),
                                   fmt::join(shown, ", ")));
    }
    return;
  }
}

}  // namespace

void add_target_options(CLI::App& cmd, TargetOptions& options) {
  cmd.add_option("-w,--worker", options.workers,
                 "Workers to act on: all, N, N,M or N-M (gcloud's syntax)")
      ->default_str("all");
  cmd.add_option("--fanout", options.fanout, "At most this many workers at once")
      ->default_str("64")
      ->check(CLI::Range(1, 4096));
}

Target resolve_target(const TargetOptions& options, Context& ctx) {
  return select_workers(load_pod(ctx.pod_request, ctx.env, ctx.processes), options.workers);
}

PodConfig load_pod_records(Context& ctx) {
  PodRequest request = ctx.pod_request;
  request.need_workers = false;
  return load_pod(request, ctx.env, ctx.processes);
}

RunTarget load_run_target(const std::string& run_spec, Context& ctx) {
  PodConfig pod = load_pod_records(ctx);
  if (pod.logs_root.empty()) throw UsageError(fmt::format("pod '{}' has no logs_root; see docs/config.md", pod.name));
  RunRecord run = read_run_record(find_run_dir(pod.logs_root, local_user(ctx.env), run_spec));
  if (!ctx.pod_request.pod && run.pod != pod.name) {
    // The run's own pod (a multi-slice run's, say) has its workers' SSH settings.
    if (auto other = other_pod_of_run(pod, run.run_id, ctx)) {
      ctx.pod_request.pod = *other;
      pod = load_pod_records(ctx);
    }
  }
  return {std::move(pod), std::move(run)};
}

std::vector<Worker> chosen_run_workers(const RunRecord& run, const std::string& spec) {
  std::vector<Worker> workers;
  for (int i : parse_worker_selection(spec, static_cast<int>(run.workers.size()))) {
    workers.push_back(run.workers[static_cast<size_t>(i)]);
  }
  return workers;
}

int main(int argc, char** argv) {
  CLI::App app{help::kTpurunAbout, "tpurun"};
  app.footer(help::kTpurun);
  app.require_subcommand(1);
  app.fallthrough();  // global flags are accepted after the subcommand too
  app.set_version_flag("--version", version_line());

  std::string config_path, pod_name;
  int verbosity = 0;
  app.add_option("--config", config_path, "Config file (default: ./tpurun.json, then ~/.config/tpurun/config.json)");
  app.add_option("--pod", pod_name, "Pod to use (default: $TPURUN_POD, then the config's default_pod)");
  app.add_flag("-v,--verbose", verbosity, "More detail; repeat for SSH protocol logs");

  // The command table drives both dispatch and --help, so they cannot drift apart.
  ExecOptions exec;
  StageOptions stage;
  LogsOptions logs;
  RunsOptions runs;
  GcOptions gc;
  StatusOptions status;
  KillCommandOptions kill;
  WatcherOptions watcher;
  AdoptOptions adopt;
  HostKeysOptions hostkeys;
  ClaimOptions claim;
  ReleaseOptions release;
  ClaimsOptions claims;
  TensorBoardOptions tensorboard;
  TopOptions top;
  ProfileOptions profile;
  StacksOptions stacks;
  DoctorOptions doctor;
  InitOptions init;
  UpOptions up;
  DownOptions down;
  AgentOptions agent;
  KeeperOptions keeper;
  const std::vector<std::pair<CLI::App*, std::function<int(Context&)>>> commands = {
      {register_exec(app, exec), [&](Context& c) { return run_exec(exec, c); }},
      {register_stage(app, stage), [&](Context& c) { return run_stage(stage, c); }},
      {register_logs(app, logs), [&](Context& c) { return run_logs(logs, c); }},
      {register_runs(app, runs), [&](Context& c) { return run_runs(runs, c); }},
      {register_gc(app, gc), [&](Context& c) { return run_gc(gc, c); }},
      {register_status(app, status), [&](Context& c) { return run_status(status, c); }},
      {register_top(app, top), [&](Context& c) { return run_top(top, c); }},
      {register_profile(app, profile), [&](Context& c) { return run_profile(profile, c); }},
      {register_stacks(app, stacks), [&](Context& c) { return run_stacks(stacks, c); }},
      {register_kill(app, kill), [&](Context& c) { return run_kill(kill, c); }},
      {register_watcher(app, watcher), [&](Context& c) { return run_watcher(watcher, c); }},
      {register_adopt(app, adopt), [&](Context& c) { return run_adopt(adopt, c); }},
      {register_hostkeys(app, hostkeys), [&](Context& c) { return run_hostkeys(hostkeys, c); }},
      {register_claim(app, claim), [&](Context& c) { return run_claim(claim, c); }},
      {register_release(app, release), [&](Context& c) { return run_release(release, c); }},
      {register_claims(app, claims), [&](Context& c) { return run_claims(claims, c); }},
      {register_tensorboard(app, tensorboard), [&](Context& c) { return run_tensorboard(tensorboard, c); }},
      {register_doctor(app, doctor), [&](Context& c) { return run_doctor(doctor, c); }},
      {register_init(app, init), [&](Context& c) { return run_init(init, c); }},
      {register_up(app, up), [&](Context& c) { return run_up(up, c); }},
      {register_down(app, down), [&](Context& c) { return run_down(down, c); }},
      {register_agent(app, agent), [&](Context& c) { return run_agent(agent, c); }},
      {register_keeper(app, keeper), [&](Context& c) { return run_keeper_command(keeper, c); }},
  };

  SystemEnvironment env;
  SystemProcessRunner processes;
  Context ctx(env, processes);
  ctx.out_is_tty = isatty(STDOUT_FILENO) && !env.get("NO_COLOR");
  ctx.err_is_tty = isatty(STDERR_FILENO) && !env.get("NO_COLOR");
  try {
    check_subcommand(argc, argv, app);
    parse_with_command(app, argc, argv);
    ctx.verbosity = verbosity;
    init_diagnostics(verbosity);
    spdlog::debug("{}", version_line());
    // A run's watcher (and _adopt) keep their own sessions, never the keeper's.
    const bool keep = !app.got_subcommand("_watcher") && !app.got_subcommand("_adopt");
    ctx.make_transport = [&ctx, keep](const PodConfig& pod) {
      return with_first_use_offer(make_real_transport(pod, ctx.verbosity, ctx.env, ctx.processes, keep), pod, ctx);
    };
    if (!config_path.empty()) ctx.pod_request.config_path = config_path;
    if (!pod_name.empty()) ctx.pod_request.pod = pod_name;
    ctx.cancel = CancelToken(install_interrupt_handler());
    for (const auto& [cmd, run] : commands) {
      if (!*cmd) continue;
      const int code = run(ctx);
      log_peak_memory();
      return code;
    }
    return 2;
  } catch (const CLI::ParseError& e) {
    // --help and --version are CLI11's "successes" (0); every mistake in the
    // arguments is a usage error, 2, as tpurun's own are (CLI11 would return
    // 104, 106, 109, ... by kind).
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpurun: error: {}\n", e.what());
    return 2;
  } catch (const Interrupted& e) {
    fmt::print(stderr, "tpurun: {}\n", e.what());
    return interrupt_exit_code();
  } catch (const UsageError& e) {
    fmt::print(stderr, "tpurun: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpurun: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace tpurun::cli
