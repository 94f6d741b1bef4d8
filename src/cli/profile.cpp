// tpurun profile: one profile of every worker of a run at once, lined up, in
// TensorBoard's layout under the run's log dir (docs/profile.md).
#include "cli/profile.hpp"

#include <fmt/format.h>

#include <chrono>

#include "cli/help_texts.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/runs/record/profile_layout.hpp"
#include "tpurun/runs/record/recorded_pod.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/tpu/profile.hpp"
#include "tpurun/ui/profile_view.hpp"
#include "tpurun/ui/report.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun::cli {
namespace {

constexpr long long kMaxDurationMs = 10LL * 60 * 1000;
constexpr long long kMaxDelayMs = 60LL * 60 * 1000;

long long checked_ms(const std::string& flag, const std::string& text, long long min_ms, long long max_ms) {
  long long ms = 0;
  try {
    ms = parse_duration(text).count();
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{} {}: {}", flag, text, e.what()));
  }
  if (ms < min_ms || ms > max_ms) {
    throw UsageError(fmt::format("{} {}: pick {} to {}", flag, text, format_duration_ms(min_ms),
                                 format_duration_ms(max_ms)));
  }
  return ms;
}

void check_level(const char* flag, int level, int max) {
  if (level < 0 || level > max) throw UsageError(fmt::format("{} {}: pick 0 to {}", flag, level, max));
}

}  // namespace

CLI::App* register_profile(CLI::App& app, ProfileOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "profile", "Profile every worker of a run at once, lined up, into TensorBoard's layout in its log dir");
  cmd->add_option("run", o.run, "Run id (or a unique prefix, or 'last', the default)");
  add_target_options(*cmd, o.target);
  cmd->add_option("-d,--duration", o.duration, "How long each worker traces (e.g. 500ms, 2s, 1m; at most 10m)")
      ->default_str("2s");
  cmd->add_option("-p,--port", o.port, "The port the job's profiler server listens on, on every worker")
      ->default_str("9999");
  cmd->add_option("--delay", o.delay, "Start tracing this long after every worker is ready (e.g. 30s; at most 1h)")
      ->default_str("0");
  cmd->add_option("--host-tracer-level", o.host_tracer_level, "0 off, 1 user annotations, 2 more, 3 verbose")
      ->default_str("2");
  cmd->add_option("--device-tracer-level", o.device_tracer_level, "0 off, 1 on (the TPU's own activity)")
      ->default_str("1");
  cmd->add_option("--python-tracer-level", o.python_tracer_level, "0 off, 1 on (every Python call; costly)")
      ->default_str("0");
  cmd->add_flag("--json", o.json, "Print one JSON document (schema: docs/profile.md)");
  cmd->add_flag("-n,--dry-run", o.dry_run, "Print the session, the workers and where each trace would go; "
                                           "connect to nothing");
  cmd->footer(help::kProfile);
  return cmd;
}

int run_profile(const ProfileOptions& o, Context& ctx) {
  ProfileRequestPlan plan;
  plan.settings.duration_ms = static_cast<uint64_t>(checked_ms("--duration", o.duration, 1, kMaxDurationMs));
  plan.delay_ms = checked_ms("--delay", o.delay, 0, kMaxDelayMs);
  if (o.port < 1 || o.port > 65535) throw UsageError(fmt::format("--port {}: pick a port in 1-65535", o.port));
  check_level("--host-tracer-level", o.host_tracer_level, 3);
  check_level("--device-tracer-level", o.device_tracer_level, 1);
  check_level("--python-tracer-level", o.python_tracer_level, 1);
  plan.settings.host_tracer_level = static_cast<uint32_t>(o.host_tracer_level);
  plan.settings.device_tracer_level = static_cast<uint32_t>(o.device_tracer_level);
  plan.settings.python_tracer_level = static_cast<uint32_t>(o.python_tracer_level);
  plan.port = o.port;
  plan.fanout = o.target.fanout;

  const RunTarget target = load_run_target(o.run, ctx);
  const PodConfig& pod = target.pod;
  const RunRecord& run = target.run;
  const std::vector<Worker> workers = chosen_run_workers(run, o.target.workers);
  plan.run_id = run.run_id;
  plan.settings.repository_root = profile_root(workers_log_dir(run));
  if (!run.worker_log_dir.empty()) plan.fetch = fetch_trace_into(run);  // no shared mount
  plan.settings.session_id = new_session_id(std::chrono::system_clock::now(), plan.settings.repository_root);

  ProfileReport report{run.run_id, o.port, plan.settings, {}};
  if (o.dry_run) {
    for (const Worker& w : workers) {
      const std::string host = profile_host_name(w);
      report.workers.push_back({w, host, TraceWritten{trace_path(plan.settings, host), std::nullopt, false, ""}});
    }
    if (o.json) {
      nlohmann::json doc = profile_report_to_json(report);
      doc["dry_run"] = true;
      doc["start_timestamp_ns"] = nullptr;
      for (auto& w : doc["workers"]) w.erase("outcome");
      print_json(ctx.out, doc);
      return 0;
    }
    fmt::print(ctx.out, "would profile run {} for {} on port {}, session {}:\n", run.run_id,
               format_duration_ms(static_cast<long long>(plan.settings.duration_ms)), o.port,
               plan.settings.session_id);
    for (const WorkerProfile& p : report.workers) {
      fmt::print(ctx.out, "  {}  -> {}\n", p.worker.display(), std::get<TraceWritten>(p.outcome).path);
    }
    return 0;
  }

  auto transport = ctx.make_transport(pod);
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  printer.progress(fmt::format("profiling {} for {}...", count_of(workers.size(), "worker"),
                               format_duration_ms(static_cast<long long>(plan.settings.duration_ms))));
  report.workers = capture_profiles(workers, *transport, plan, ctx.cancel);
  printer.clear_progress();
  report.settings.start_timestamp_ns = plan.settings.start_timestamp_ns;
  const int code = profile_exit_code(report.workers, ctx.cancel.cancelled());
  if (o.json) {
    nlohmann::json doc = profile_report_to_json(report);
    doc["exit_code"] = code;
    print_json(ctx.out, doc);
  } else {
    const std::string text = format_profile_report(report);
    std::fwrite(text.data(), 1, text.size(), ctx.out);
    std::fflush(ctx.out);
  }
  return code;
}

}  // namespace tpurun::cli
