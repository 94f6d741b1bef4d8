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
  if (cancel_.cancelled() && !stop_requested(setup_.record.log_dir)) {
    say_("the watcher was stopped by a signal while recreating the TPU VM; tpurun logs RUN -f watches again");
    signalled_ = true;
    return false;
  }
  monitor.recreate_failed(why);
  say_(fmt::format("not recreated: {}; the run ends here (its logs stay)", why));
  message_ = "TPU VM not recreated: " + why;
  return false;
}

bool PreemptionRecovery::recover(GangMonitor& monitor, const RestartCheck& check, const std::vector<Worker>& workers) {
  const RunRecord& record = setup_.record;
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
  RecreateIo io{processes_, transport_, cancel_, say_, [this] {
                  heartbeat_();
                  return stop_requested(setup_.record.log_dir);
                }};
  const RecreateResult result = recreate_tpu_vm(job, check.gone_node, io);
  Preemption* last = monitor.last_preemption();
  last->api_s = result.api_s;
  last->keys_s = result.keys_s;
  last->setup_s = result.setup_s;
  if (!result.ok) return give_up(monitor, result.why);
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
