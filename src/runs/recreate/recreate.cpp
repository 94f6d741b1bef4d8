// The recreate itself: the safety rules' facts, then delete, create, READY,
// keys, setup. Each step says what it runs in watcher.log; every delete
// and create is in the user's audit log before gcloud is asked.
#include "runs/recreate/recreate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <thread>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/board/claim_check.hpp"
#include "tpurun/cloud/gcloud_call.hpp"
#include "tpurun/cloud/pod_setup.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/pod/queued_resource.hpp"
#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/tpu/kill_audit.hpp"
#include "tpurun/tpu/holders.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class Recreate {
 public:
  Recreate(const RecreateJob& job, RecreateIo& io) : job_(job), io_(io) {}

  RecreateResult run(const TpuNode& gone) {
    if (auto why = recreate_refusal(facts(gone))) return refuse(*why);
    const auto api_start = Clock::now();
    TpuNode now = describe();  // again, just before the delete: it may have changed meanwhile
    RecreateFacts fresh = facts_of(now);
    fresh.claimed_by = std::nullopt;  // checked above; the rest is still what it was
    if (auto why = recreate_refusal(fresh)) return refuse(*why);
    if (now.state != "NOT_FOUND" && !remove(now)) return std::move(result_);
    result_.deleted = true;
    if (!create()) return ended();
    auto node = wait_ready();
    if (!node) return ended();
    result_.api_s = seconds_since(api_start);
    const auto keys_start = Clock::now();
    if (!push_keys()) return ended("key push");
    result_.keys_s = seconds_since(keys_start);
    const auto setup_start = Clock::now();
    if (!run_setup(*node)) return ended("setup");
    result_.setup_s = seconds_since(setup_start);
    result_.ok = true;
    result_.node = std::move(node);
    return std::move(result_);
  }

 private:
  // A step after the create failed. Stopped on purpose (kill --run, down):
  // what this recreate created goes again. Else, during `step` (the key push,
  // the setup), the new VM may have been preempted too: a preemption of its
  // own (issue 39, finding 11), for the caller to count and try again.
  RecreateResult ended(const char* step = nullptr) {
    if (io_.stopped()) {
      undo_create();
    } else if (step != nullptr && !io_.cancel.cancelled()) {
      const TpuNode now = describe();
      if (now.state == "PREEMPTED" || now.state == "TERMINATED" || now.state == "NOT_FOUND") {
        result_.why = fmt::format("TPU VM {} is {} during the recreate's {} ({})", job_.spec.name, node_state_text(now),
                                  step, result_.why);
        result_.preempted_again = now;
      }
    }
    return std::move(result_);
  }

  // Deletes what create() sent, as it was sent (a queued resource with
  // --force): not cancellable, since a stop is what asks for it.
  void undo_create() {
    if (!created_) return;
    created_ = false;
    const bool through_qr = queued();
    std::vector<std::string> argv;
    try {
      argv = through_qr ? gcloud_qr_delete_argv(queued_resource_spec(job_.spec, recorded_shape()), true)
                        : gcloud_delete_argv(job_.spec);
    } catch (const std::exception& e) {
      result_.why += fmt::format("; what it created may be left: {}", e.what());
      return;
    }
    if (!audit(through_qr ? "queued-resource-delete" : "tpu-vm-delete", "", argv)) return;
    io_.say(fmt::format("deleting what this recreate created: {}", shell_display(argv)));
    const ProcessResult r = io_.processes.run_bounded(argv, job_.gcloud_timeout, CancelToken());
    if (r.exit_code != 0 && !is_not_found(r.err)) {
      result_.why += fmt::format("; gcloud could not delete what it created ({}): `{}` deletes it", gcloud_said(r),
                                 shell_display(argv));
      return;
    }
    result_.why += "; what it created is deleted";
  }

  RecreateResult refuse(const std::string& why) {
    result_.why = why;
    return std::move(result_);
  }
  bool fail(const std::string& why) {
    result_.why = why;
    return false;
  }

  RecreateFacts facts_of(const TpuNode& node) const {
    RecreateFacts f;
    f.state = node.state;
    f.name = node.name;
    f.id = node.id;
    f.pod_tpu = job_.spec.name;
    f.recorded_id = job_.recorded_id;
    f.run_active = !io_.stopped();
    try {
      f.not_recreatable = why_not_recreatable(read_tpu_vm_shape(read_small_file(recorded_tpu_vm_path(job_.log_dir))));
    } catch (const std::exception& e) {
      f.not_recreatable = fmt::format("its describe at stage time ({}) is unreadable: {}",
                                      recorded_tpu_vm_path(job_.log_dir), e.what());
    }
    return f;
  }

  RecreateFacts facts(const TpuNode& gone) const {
    RecreateFacts f = facts_of(gone);
    f.claimed_by = claimed_by_another(job_.logs_root, job_.pod, job_.user, io_.say);
    f.foreign_tpu_users =
        other_users_on_tpu(scan_workers(job_.workers, io_.transport, job_.fanout, io_.cancel, job_.device_globs));
    return f;
  }

  TpuNode describe() const {
    try {
      return describe_node(job_.pod, job_.spec, io_.processes);
    } catch (const TpuUnavailable& e) {
      return e.node();  // NOT_FOUND
    } catch (const std::exception& e) {
      TpuNode unknown;
      unknown.state = "UNKNOWN";
      unknown.health_description = e.what();
      return unknown;
    }
  }

  bool audit(const std::string& event, const std::string& node_id, const std::vector<std::string>& argv) {
    const std::string line =
        recreate_audit_entry(std::time(nullptr), event, job_.user, job_.pod, job_.spec, node_id, job_.run_id, argv);
    if (auto error = append_audit(job_.audit_path, line)) return fail(*error + "; without a record, nothing is done");
    return true;
  }

  // Nobody watches the watcher: a gcloud call that hangs (an API that never
  // answers, a prompt) is given up after its limit, or when the watcher is told
  // to stop, and the recreate fails saying so.
  ProcessResult gcloud(const std::vector<std::string>& argv, std::chrono::seconds limit) {
    ProcessResult r = io_.processes.run_bounded(argv, limit, io_.cancel);
    if (r.timed_out) {
      r.err = fmt::format("no answer in {}s, gave up (the TPU VM is left as it is: gcloud compute tpus tpu-vm "
                          "describe {} --zone {}{} shows its state)",
                          limit.count(), job_.spec.name, job_.spec.zone,
                          job_.spec.project.empty() ? "" : " --project " + job_.spec.project);
    }
    return r;
  }

  // The recorded shape; throws when its describe is unreadable.
  TpuVmShape recorded_shape() const { return read_tpu_vm_shape(read_small_file(recorded_tpu_vm_path(job_.log_dir))); }

  // A VM that a queued resource made goes with it (delete --force), and comes back through it.
  bool queued() const {
    try {
      return !recorded_shape().queued_resource.empty();
    } catch (const std::exception&) {
      return false;
    }
  }

  bool remove(const TpuNode& node) {
    const bool through_qr = queued();
    const auto argv = through_qr ? gcloud_qr_delete_argv(queued_resource_spec(job_.spec, recorded_shape()), true)
                                 : gcloud_delete_argv(job_.spec);
    if (!audit(through_qr ? "queued-resource-delete" : "tpu-vm-delete", node.id, argv)) return false;
    io_.say(fmt::format("deleting TPU VM {} ({}, id {}){}: {}", job_.spec.name, node.state, node.id,
                        through_qr ? " and its queued resource" : "", shell_display(argv)));
    const ProcessResult r = gcloud(argv, job_.gcloud_timeout);
    if (r.exit_code != 0 && !is_not_found(r.err)) return fail("gcloud could not delete it: " + gcloud_said(r));
    return true;
  }

  bool create() {
    TpuVmShape shape;
    try {
      shape = read_tpu_vm_shape(read_small_file(recorded_tpu_vm_path(job_.log_dir)));
      const std::string dir = metadata_dir(job_.log_dir);
      if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw std::runtime_error("cannot create " + dir);
      for (const auto& [path, value] : metadata_files(shape, dir)) write_file_atomic(path, value);
    } catch (const std::exception& e) {
      return fail(fmt::format("cannot prepare the create: {}", e.what()));
    }
    const bool through_qr = !shape.queued_resource.empty();
    const auto argv = through_qr
                    ? gcloud_qr_create_argv(job_.spec, shape, queued_options_of(shape), metadata_dir(job_.log_dir))
                    : gcloud_create_argv(job_.spec, shape, metadata_dir(job_.log_dir));
    if (io_.stopped()) return fail("stopped before TPU VM " + job_.spec.name + " was created again");
    if (!audit(through_qr ? "queued-resource-create" : "tpu-vm-create", "", argv)) return false;
    io_.say(fmt::format("creating TPU VM {} again{}: {}", job_.spec.name,
                        through_qr ? " through its queued resource" : "", shell_display(argv)));
    created_ = true;  // from here on: a create stopped half-way may still be made by the API
    const ProcessResult r = gcloud(argv, job_.ready_timeout);
    if (r.exit_code != 0) {
      // Refused, not made: nothing of it to delete (ALREADY_EXISTS is someone else's).
      if (!io_.cancel.cancelled()) created_ = false;
      return fail("gcloud could not create it: " + gcloud_said(r));
    }
    return true;
  }

  // Describes until READY, saying each state it passes through.
  // A queued resource that will not give the VM: FAILED (its error), SUSPENDED or gone.
  std::optional<std::string> queued_failure() {
    const GcloudSpec qr_spec = queued_resource_spec(job_.spec, recorded_shape());
    const ProcessResult r = gcloud(gcloud_qr_describe_argv(qr_spec), job_.gcloud_timeout);
    if (r.exit_code != 0) {
      if (is_not_found(r.err)) return fmt::format("queued resource {} is gone", qr_spec.name);
      return std::nullopt;  // asked again at the next poll
    }
    try {
      const QueuedResource qr = parse_queued_resource(r.out);
      if (qr.pending() || qr.state == "ACTIVE") return std::nullopt;
      return fmt::format("queued resource {} is {}{}", qr_spec.name, qr.state, qr.error.empty() ? "" : ": " + qr.error);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  std::optional<TpuNode> wait_ready() {
    const bool through_qr = queued();
    const auto deadline = Clock::now() + job_.ready_timeout;
    std::string last;
    int missing = 0;
    for (;;) {
      if (io_.stopped()) {
        fail(fmt::format("stopped while TPU VM {} was being created", job_.spec.name));
        return std::nullopt;
      }
      if (io_.cancel.cancelled()) {
        fail(fmt::format("stopped while TPU VM {} was being created (it is left as it is)", job_.spec.name));
        return std::nullopt;
      }
      TpuNode node = describe();
      const std::string state = node_state_text(node);
      if (state != last) io_.say(fmt::format("TPU VM {} is {}", job_.spec.name, state));
      last = state;
      if (node.ready() && node.endpoint_error.empty() && !node.workers.empty()) {
        write_file_atomic(recorded_tpu_vm_path(job_.log_dir), node.json);
        return node;
      }
      missing = node.state == "NOT_FOUND" ? missing + 1 : 0;
      if (through_qr && node.state == "NOT_FOUND") {
        // No node until the queue gives one: the queued resource says how it goes.
        if (auto why = queued_failure()) {
          fail(*why);
          return std::nullopt;
        }
        missing = 0;
      }
      if (node.state == "PREEMPTED" || node.state == "TERMINATED") {
        fail(fmt::format("TPU VM {} is {} again before it was READY", job_.spec.name, state));
        result_.preempted_again = node;
        return std::nullopt;
      }
      if (missing >= 3) {
        fail(fmt::format("TPU VM {} did not come up: it is {} after the create (gcloud compute tpus tpu-vm "
                         "list shows what the zone has)",
                         job_.spec.name, state));
        return std::nullopt;
      }
      if (Clock::now() > deadline) {
        fail(fmt::format("TPU VM {} is still {} after {}s", job_.spec.name, state, job_.ready_timeout.count()));
        return std::nullopt;
      }
      std::this_thread::sleep_for(job_.poll);
    }
  }

  // gcloud's own first-use step: the user's key into the VM's metadata and
  // the new workers' host keys into ~/.ssh/google_compute_known_hosts.
  bool push_keys() {
    const auto argv = gcloud_keys_argv(job_.spec);
    io_.say(fmt::format("your key and the new host keys: {}", shell_display(argv)));
    const ProcessResult r = gcloud(argv, job_.gcloud_timeout);
    if (r.exit_code != 0) return fail("gcloud could not put your key on it: " + gcloud_said(r));
    return true;
  }

  bool run_setup(const TpuNode& node) {
    const std::string script = read_small_file(recorded_setup_path(job_.log_dir));
    if (script.empty()) {
      io_.say("no setup script (\"setup\" in the pod's config): the new TPU VM has only what its image and "
              "metadata give it");
      return true;
    }
    io_.say(fmt::format("running the pod's setup on {} (output: {})", count_of(node.workers.size(), "worker"),
                        setup_log_path(job_.log_dir)));
    PodSetup setup{script, setup_log_path(job_.log_dir), fmt::format("setup of TPU VM {} (id {})", job_.spec.name, node.id),
                   job_.fanout};
    const auto outcomes = run_pod_setup(setup, node.workers, io_.transport, io_.cancel);
    const auto failures = failure_summary(outcomes);
    if (!failures.empty()) {
      return fail(fmt::format("the setup failed: {} (see {})", fmt::join(failures, "; "),
                              setup_log_path(job_.log_dir)));
    }
    return true;
  }

  const RecreateJob& job_;
  RecreateIo& io_;
  RecreateResult result_;
  bool created_ = false;  // a create was sent, and not refused
};

}  // namespace

RecreateResult recreate_tpu_vm(const RecreateJob& job, const TpuNode& gone, RecreateIo& io) {
  return Recreate(job, io).run(gone);
}

}  // namespace tpurun
