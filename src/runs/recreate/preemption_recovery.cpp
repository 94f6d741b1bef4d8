#include "runs/recreate/preemption_recovery.hpp"

#include <fmt/format.h>

#include "runs/record/log_dir_layout.hpp"
#include "runs/recreate/recreate.hpp"
#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::system_clock;

std::string recorded_id(const std::string& log_dir) {
  try {
    return read_tpu_vm_shape(read_small_file(recorded_tpu_vm_path(log_dir))).id;
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

PreemptionRecovery::PreemptionRecovery(const WatcherSetup& setup, Transport& transport, ProcessRunner& processes,
                                       const CancelToken& cancel, Say say, std::function<void()> heartbeat)
    : setup_(setup),
      transport_(transport),
      processes_(processes),
      cancel_(cancel),
      say_(std::move(say)),
      heartbeat_(std::move(heartbeat)),
      recorded_id_(setup.record.gang.recreate ? recorded_id(setup.record.log_dir) : "") {}

bool PreemptionRecovery::give_up(GangMonitor& monitor, const std::string& why) {
  const bool killed = stop_requested(setup_.record.log_dir);
  if (cancel_.cancelled() && !killed) {
    say_("the watcher was stopped by a signal while recreating the TPU VM; tpurun logs RUN -f watches again");
    signalled_ = true;
    return false;
  }
  // Stopped on purpose meanwhile: `tpurun kill --run`, or `tpurun down`.
  if (killed) return stop_run(monitor, "stopped by tpurun kill --run while the TPU VM was being recreated", true);
  if (auto down = setup_.down_asked()) return stop_run(monitor, *down, true);
  monitor.recreate_failed(why);
  say_(fmt::format("not recreated: {}; the run ends here (its logs stay)", why));
  message_ = "TPU VM not recreated: " + why;
  return false;
}

bool PreemptionRecovery::stop_run(GangMonitor& monitor, const std::string& why, bool granted) {
  if (granted) monitor.recreate_failed(why);  // the attempt this preemption granted is not to come
  monitor.stopped_on_purpose(why);
  say_(fmt::format("{}: the run is stopped, and its TPU VM is not made again", why));
  message_ = why;
  return false;
}

RecreateJob PreemptionRecovery::recreate_job(const std::vector<Worker>& workers) const {
  const RunRecord& record = setup_.record;
  RecreateJob job;
  job.run_id = record.run_id;
  job.log_dir = record.log_dir;
  job.user = record.user;
  job.pod = setup_.pod.name;
  job.logs_root = setup_.pod.logs_root;
  job.spec = *setup_.pod.gcloud;
  job.recorded_id = recorded_id_;
  job.workers = workers;
  job.device_globs = setup_.pod.device_globs;
  job.audit_path = setup_.audit_path;
  job.fanout = setup_.fanout;
  return job;
}

bool PreemptionRecovery::recover(GangMonitor& monitor, const RestartCheck& check, const std::vector<Worker>& workers) {
  const RunRecord& record = setup_.record;
  // `tpurun down` deleted it, or asked to: down means down (issue 39, finding 9).
  if (auto down = setup_.down_asked()) return stop_run(monitor, fmt::format("{}; {}", check.gone, *down), false);
  const std::string tpu = setup_.pod.gcloud ? setup_.pod.gcloud->name : setup_.pod.name;
  Preemption p;
  p.tpu = tpu;
  p.state = check.gone_state;
  p.detail = check.gone;
  p.at = format_utc_time(Clock::now());
  p.node_id = check.gone_node.id;
  const auto& failure = monitor.state().first_failure;
  p.since = failure && failure->how == "lost" && !failure->since.empty() ? failure->since : p.at;
  if (!monitor.preempted(p)) {
    message_ = check.gone;
    if (!record.gang.recreate) {
      say_(fmt::format("{}; it never comes back by itself: delete it and create it again, then stage the run "
                       "again (its logs stay here), or stage with --recreate",
                       check.gone));
      if (Preemption* last = monitor.last_preemption()) {
        last->action = "not recreated";
        last->why = "no --recreate";
      }
      return false;
    }
    const std::string why = fmt::format("{} preemptions, and --max-preemptions {} allows {}",
                                        monitor.state().preemptions.size(), record.gang.max_preemptions,
                                        record.gang.max_preemptions);
    say_(fmt::format("{}; not recreated: {}", check.gone, why));
    if (Preemption* last = monitor.last_preemption()) {
      last->action = "not recreated";
      last->why = why;
    }
    message_ = fmt::format("{}; not recreated: {}", check.gone, why);
    return false;
  }
  say_(fmt::format("{}: recreating it (preemption {} of at most {}; a preemption uses up no restart)", check.gone,
                   monitor.state().preemptions.size(), record.gang.max_preemptions));
  if (setup_.env_missing) return give_up(monitor, "this run's --env values were not kept on this host");
  heartbeat_();

  RecreateJob job = recreate_job(workers);
  RecreateIo io{processes_, transport_, cancel_, say_, [this] {
                  heartbeat_();
                  return stop_requested(setup_.record.log_dir) || setup_.down_asked().has_value();
                }};
  TpuNode gone = check.gone_node;
  RecreateResult result;
  for (;;) {
    result = recreate_tpu_vm(job, gone, io);
    Preemption* last = monitor.last_preemption();
    last->api_s = result.api_s;
    last->keys_s = result.keys_s;
    last->setup_s = result.setup_s;
    if (result.ok) break;
    if (!result.preempted_again || cancel_.cancelled() || io.stopped()) return give_up(monitor, result.why);
    // The new VM was preempted before the run could go on there (issue 39,
    // finding 11): a preemption of its own; tried again while the budget lasts.
    const TpuNode& again = *result.preempted_again;
    last->action = "recreated";
    last->new_id = again.id;
    Preemption next;
    next.tpu = tpu;
    next.state = again.state;
    next.detail = result.why;
    next.at = next.since = format_utc_time(Clock::now());
    next.node_id = again.id;
    if (!monitor.preempted_while_recreating(next)) {
      const std::string& why = monitor.last_preemption()->why;
      say_(fmt::format("{}; not recreated: {}", result.why, why));
      message_ = fmt::format("{}; not recreated: {}", result.why, why);
      return false;
    }
    say_(fmt::format("{}: recreating it again (preemption {} of at most {})", result.why,
                     monitor.state().preemptions.size(), record.gang.max_preemptions));
    recorded_id_ = job.recorded_id = again.id;
    gone = again;
  }
  Preemption* last = monitor.last_preemption();
  last->action = "recreated";
  last->new_id = result.node->id;
  if (setup_.keep_new_vm) setup_.keep_new_vm(*result.node);
  recorded_id_ = result.node->id;
  recovered_at_ = std::chrono::steady_clock::now();
  say_(fmt::format("TPU VM {} is back (id {}; gcloud {:.1f}s, keys {:.1f}s, setup {:.1f}s): relaunching", tpu,
                   result.node->id, result.api_s, result.keys_s, result.setup_s));
  return true;
}

void PreemptionRecovery::resumed(GangMonitor& monitor, int attempt) {
  if (!recovered_at_) return;
  Preemption* last = monitor.last_preemption();
  if (last == nullptr || !last->recreated()) return;
  const auto now = Clock::now();
  last->resumed_at = format_utc_time(now);
  last->resumed_attempt = attempt;
  last->launch_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *recovered_at_).count();
  if (auto since = parse_utc_time(last->since)) last->down_s = std::chrono::duration<double>(now - *since).count();
  recovered_at_.reset();
  say_(fmt::format("resumed as attempt {}, {:.0f}s after TPU VM {} went down", attempt, last->down_s, last->tpu));
}

}  // namespace tpurun
