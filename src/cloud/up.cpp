// up: provision, then the same steps as a recreate (keys, the workers
// answering, the setup), then the result; on a failure or Ctrl-C, what this
// `up` made goes again (--keep leaves it), and says so.
#include "tpurun/cloud/up.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <thread>

#include "owner_rule.hpp"
#include "provision.hpp"
#include "tpurun/cloud/pod_setup.hpp"
#include "tpurun/fanout/fanout.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/pod/down_intent.hpp"
#include "tpurun/pod/placement.hpp"
#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/tpu/kill_audit.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"
#include "tpurun/util/text.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

const char* const kUserLabel = "tpurun-user";

std::vector<std::string> keys_argv(const GcloudSpec& where) {
  std::vector<std::string> argv = gcloud_import_argv(where, "all");
  argv.insert(argv.end() - 1, "--quiet");  // no passphrase or key-generation prompt
  return argv;
}

ProvisionJob provision_job(const UpJob& job) {
  ProvisionJob p;
  p.pod = job.pod;
  p.gcloud = job.gcloud;
  p.create = job.create;
  p.labels = up_labels(job.user);
  p.metadata_dir = job.state_dir + "/up-metadata-" + job.pod;
  p.max_queued = job.max_queued;
  p.ready_timeout = job.ready_timeout;
  p.gcloud_timeout = job.gcloud_timeout;
  p.poll = job.poll;
  p.first_zone = job.placed_zone;
  return p;
}

class Up {
 public:
  Up(const UpJob& job, UpIo& io)
      : job_(job), io_(io), gcloud_{io.processes, job.audit_path, job.user, job.pod} {}

  UpResult run() {
    const auto start = Clock::now();
    ProvisionIo pio{gcloud_, io_.cancel, io_.say, io_.status, io_.live_status, [&](const Made& m) { placing(m); }};
    ProvisionResult p = provision(provision_job(job_), pio);
    made_ = p.made;
    found_ = p.found;
    if (!p.node) {
      result_.cancelled = p.cancelled;
      result_.why = p.cancelled ? interrupted_by() : p.why;
      result_.fix = p.fix;
      clean_up();
      return std::move(result_);
    }
    result_.provision_s = std::chrono::duration<double>(p.ready_at - start).count();
    result_.zone = p.where.zone;
    result_.queued_resource = p.queued_resource;
    try {
      keep_placement(job_.gcloud, Placement{p.where.zone, p.queued_resource, format_utc_time(std::chrono::system_clock::now())},
                     io_.env);
    } catch (const std::exception& e) {
      io_.say(fmt::format("warning: cannot record where TPU VM {} was made ({}): later commands look in {}",
                          job_.gcloud.name, e.what(), job_.gcloud.zone));
    }
    if (!prepare(p.where, *p.node, true)) clean_up();
    if (result_.ok) set_interrupt_last_words("");
    return std::move(result_);
  }

  UpResult take() { return std::move(result_); }

  // Keys, the workers answering, the setup: false (result_.why) when one fails.
  bool prepare(const GcloudSpec& where, const TpuNode& node, bool run_setup) {
    result_.node = node;
    result_.zone = where.zone;
    const auto own_start = Clock::now();
    if (!push_keys(where) || !wait_answers(node)) return false;
    result_.own_s = seconds_since(own_start);
    if (run_setup && !setup(node)) return false;
    result_.ok = true;
    return true;
  }

 private:
  bool failed(const std::string& why) {
    result_.why = io_.cancel.cancelled() ? interrupted_by() : why;
    result_.cancelled = io_.cancel.cancelled();
    return false;
  }

  // gcloud's own first use: your key into the VM's metadata, the host keys
  // into ~/.ssh/google_compute_known_hosts. A VM just READY may not run sshd
  // yet: tried again for answer_timeout.
  bool push_keys(const GcloudSpec& where) {
    const auto argv = keys_argv(where);
    io_.say(fmt::format("your key and the workers' host keys: {}", shell_display(argv)));
    const auto deadline = Clock::now() + job_.answer_timeout;
    for (;;) {
      io_.status(fmt::format("TPU VM {}: your key and its host keys", where.name));
      const ProcessResult r = gcloud_.run(argv, job_.gcloud_timeout, io_.cancel);
      if (r.exit_code == 0) return true;
      if (io_.cancel.cancelled() || Clock::now() > deadline) {
        return failed("gcloud could not put your key on it: " + gcloud_said(r));
      }
      std::this_thread::sleep_for(job_.poll);
    }
  }

  bool wait_answers(const TpuNode& node) {
    const auto deadline = Clock::now() + job_.answer_timeout;
    FanoutPlan plan;
    plan.workers = node.workers;
    plan.command = RemoteCommand{"true", "", 0};
    plan.fanout = job_.fanout;
    for (;;) {
      io_.status(fmt::format("TPU VM {}: waiting for {} to answer", node.name, count_of(plan.workers.size(), "worker")));
      const auto outcomes = run_on_workers(plan, io_.transport, std::vector<OutputSink*>(plan.workers.size()), io_.cancel);
      std::vector<Worker> silent;
      for (const WorkerOutcome& o : outcomes) {
        if (!o.ok()) silent.push_back(o.worker);
      }
      if (silent.empty()) return true;
      if (io_.cancel.cancelled() || Clock::now() > deadline) {
        return failed(fmt::format("not every worker answers: {}", fmt::join(failure_summary(outcomes), "; ")));
      }
      plan.workers = silent;
      std::this_thread::sleep_for(job_.poll);
    }
  }

  bool setup(const TpuNode& node) {
    if (job_.setup_script.empty()) {
      io_.say("no setup script (\"setup\" in the pod's config): the TPU VM has only what its image gives it");
      return true;
    }
    PodSetup s;
    // read_small_file says "" for a file it cannot open: ask first, so a
    // script removed since `up` began is an error, not an empty setup.
    if (::access(job_.setup_script.c_str(), R_OK) != 0) {
      return failed(fmt::format("cannot read the pod's setup script {}: {}", job_.setup_script, std::strerror(errno)));
    }
    s.script = read_small_file(job_.setup_script);
    s.log_path = result_.setup_log = job_.state_dir + "/up-" + job_.pod + ".setup.log";
    s.title = fmt::format("setup of TPU VM {} (id {})", node.name, node.id);
    s.fanout = job_.fanout;
    io_.say(fmt::format("running the pod's setup ({}) on {} (output: {})", job_.setup_script,
                        count_of(node.workers.size(), "worker"), s.log_path));
    io_.status(fmt::format("TPU VM {}: setup on {}", node.name, count_of(node.workers.size(), "worker")));
    const auto start = Clock::now();
    result_.setup = run_pod_setup(s, node.workers, io_.transport, io_.cancel);
    result_.setup_s = seconds_since(start);
    for (const WorkerOutcome& o : result_.setup) io_.say("  setup " + setup_summary_line(o));
    const auto failures = failure_summary(result_.setup);
    if (!failures.empty()) return failed(fmt::format("the setup failed on {} (output: {})",
                                                     count_of(failures.size(), "worker"), s.log_path));
    return true;
  }

  // Where the create goes, recorded before it is sent: after a SIGKILL the
  // next up (that zone first), status and down look there.
  void placing(const Made& m) {
    try {
      keep_placement(job_.gcloud, Placement{m.where.zone, m.queued ? m.where.name : "",
                                            format_utc_time(std::chrono::system_clock::now())},
                     io_.env);
    } catch (const std::exception&) {
      // Only a hint for later commands: the create goes on without it.
    }
  }

  void clean_up() {
    if (!made_ && !found_) forget_placement(job_.gcloud, io_.env);  // nothing of this up is there
    if (!made_ && found_) {
      io_.say(fmt::format("left in place: queued resource {} in {} ({}): this up found it, and did not make it",
                          found_->where.name, found_->where.zone, found_->state));
    }
    if (!made_) return;
    const std::string what = made_->queued ? fmt::format("queued resource {} in {} ({})", made_->where.name,
                                                         made_->where.zone, made_->state)
                                           : fmt::format("TPU VM {} in {}", made_->where.name, made_->where.zone);
    if (job_.keep) {
      io_.say(fmt::format("left in place (--keep): {}; `tpurun down` deletes it", what));
      set_interrupt_last_words("");
      return;
    }
    io_.say(fmt::format("deleting what this up made: {}{}", what, made_->queued ? ", with --force" : ""));
    std::string error;
    if (!delete_made(*made_, gcloud_, job_.gcloud_timeout, error)) {
      io_.say("error: " + error);
      io_.say("left: " + left_behind_text(*made_));
      result_.left = left_behind_text(*made_);
      return;
    }
    set_interrupt_last_words("");
    forget_placement(job_.gcloud, io_.env);
    io_.say(fmt::format("deleted: {}; nothing of this up is left", what));
  }

  const UpJob& job_;
  UpIo& io_;
  GcloudCalls gcloud_;
  std::optional<Made> made_;
  std::optional<Made> found_;
  UpResult result_;
};

}  // namespace

UpJob up_job_for(const PodConfig& pod, const Environment& env) {
  if (!pod.gcloud) {
    throw UsageError(fmt::format("pod '{}' lists its workers: `up` makes a gcloud pod's TPU VM (a pod with "
                                 "\"gcloud\" and \"create\"; docs/config.md)", pod.name));
  }
  if (!pod.create) {
    throw UsageError(fmt::format("pod '{}' has no \"create\" block: say how to make its TPU VM, e.g. \"create\": "
                                 "{{\"accelerator_type\": \"v4-16\", \"runtime_version\": \"tpu-ubuntu2204-base\", "
                                 "\"spot\": true, \"zones\": [\"{}\"]}} (docs/config.md)",
                                 pod.name, pod.gcloud->zone));
  }
  UpJob job;
  job.pod = pod.name;
  job.user = local_user(env);
  job.gcloud = *pod.gcloud;
  job.create = *pod.create;
  job.setup_script = pod.setup_script;
  job.state_dir = state_dir(env);
  job.audit_path = default_audit_path(env);
  job.max_queued = job.create.max_queued;
  if (auto placed = read_placement(*pod.gcloud, env)) job.placed_zone = placed->zone;
  job.down_intent_path = down_intent_path(*pod.gcloud, env);
  return job;
}

std::string create_tier(const CreateSpec& c) {
  if (c.spot) return "spot";
  if (c.reserved) return "reserved";
  if (c.guaranteed) return "guaranteed";
  if (c.best_effort) return "best-effort";
  return "on demand";
}

UpResult bring_up(const UpJob& job, UpIo& io) {
  // "`down` means down" (issue 39, finding 9): a down asked after this up
  // began cancels it as Ctrl-C would, so it deletes what it made; an earlier
  // one is superseded by this up.
  DownIntentWatch down(job.down_intent_path, std::chrono::system_clock::now());
  const CancelToken cancel = io.cancel.or_when(down.flag());
  UpIo watched{io.processes, io.transport, io.env, cancel, io.say, io.status, io.live_status};
  UpResult r = Up(job, watched).run();
  if (auto intent = down.seen(); intent && !r.ok && !io.cancel.cancelled()) {
    r.cancelled = false;
    r.stopped_by_down = true;
    r.why = down_intent_text(*intent);
    r.fix = "`tpurun up` again brings the pod up";
  }
  return r;
}

UpResult prepare_ready_vm(const UpJob& job, const TpuNode& node, bool run_setup, UpIo& io) {
  Up up(job, io);
  up.prepare(job.gcloud, node, run_setup);
  return up.take();
}

std::vector<std::string> up_plan(const UpJob& job) {
  const ProvisionJob p = provision_job(job);
  std::vector<std::string> lines;
  for (const std::string& zone : job.create.zones) {
    const auto commands = provision_commands(p, zone);
    lines.push_back(fmt::format("in {}: {}", zone, shell_display(commands.front())));
    if (job.create.queued) {
      lines.push_back(fmt::format("  then every {}: {}  (until ACTIVE)", format_duration_ms(job.poll.count()),
                                  shell_display(commands[1])));
      lines.push_back(fmt::format("  FAILED{}: {}, then the next zone",
                                  job.max_queued.count() ? ", or waiting past " + format_age(job.max_queued.count()) : "",
                                  shell_display(commands[2])));
    } else {
      lines.push_back("  code 8 (no capacity), 9 (reservation) or 3: the next zone");
    }
  }
  GcloudSpec where = job.gcloud;
  lines.push_back("keys: " + shell_display(keys_argv(where)) + "  (in the zone that gave it)");
  lines.push_back(job.setup_script.empty() ? "setup: none (no \"setup\" in the pod's config)"
                                           : "setup: bash -s < " + job.setup_script + " on every worker");
  lines.push_back("then doctor's checks");
  return lines;
}

std::map<std::string, std::string> up_labels(const std::string& user) { return {{kUserLabel, owner_label_of(user)}}; }

std::string made_by(const std::string& describe_json) {
  try {
    const TpuVmShape shape = read_tpu_vm_shape(describe_json);
    auto it = shape.labels.find(kUserLabel);
    return it == shape.labels.end() ? "" : it->second;
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace tpurun
