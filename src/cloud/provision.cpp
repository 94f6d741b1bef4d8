// Zone after zone until one gives a READY TPU VM. Queued: create the queued
// resource, describe it every poll (the live status line: state, time in it,
// zone) until ACTIVE and its node READY; FAILED (its failedData said) or
// waiting past the limit: delete it with --force, next zone. Plain: `tpu-vm
// create` waits for the VM; code 8, 9 or 3: next zone, saying why; anything
// else (quota, permission) stops with the error and its fix.
#include "provision.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <cerrno>
#include <thread>

#include "tpurun/pod/queued_resource.hpp"
#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

long long seconds_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - t).count();
}

TpuVmShape shape_of(const ProvisionJob& job) { return shape_of_create(job.gcloud, job.create, job.labels); }

// create.metadata's values as files: they may hold newlines and commas.
void write_metadata(const ProvisionJob& job) {
  const TpuVmShape shape = shape_of(job);
  if (shape.metadata.empty()) return;
  if (::mkdir(job.metadata_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error("cannot create " + job.metadata_dir);
  }
  for (const auto& [path, value] : metadata_files(shape, job.metadata_dir)) write_file_atomic(path, value);
}

std::vector<std::string> plain_create_argv(const ProvisionJob& job, const GcloudSpec& where) {
  std::vector<std::string> argv = gcloud_create_argv(where, shape_of(job), job.metadata_dir);
  // Without --async gcloud waits for the create, and its error (code 8) is the operation's.
  std::erase(argv, std::string("--async"));
  return argv;
}

class Provision {
 public:
  Provision(const ProvisionJob& job, ProvisionIo& io) : job_(job), io_(io) {}

  ProvisionResult run() {
    try {
      write_metadata(job_);
    } catch (const std::exception& e) {
      result_.why = e.what();
      return std::move(result_);
    }
    std::vector<std::string> reasons;
    for (size_t i = 0; i < job_.create.zones.size(); ++i) {
      GcloudSpec where = job_.gcloud;
      where.zone = job_.create.zones[i];
      const std::string reason = job_.create.queued ? queued_in(where) : plain_in(where);
      if (result_.node || result_.cancelled || stopped_) return std::move(result_);
      reasons.push_back(fmt::format("{}: {}", where.zone, reason));
      if (i + 1 < job_.create.zones.size()) io_.say(fmt::format("{}; trying {}", reason, job_.create.zones[i + 1]));
    }
    result_.why = reasons.size() == 1 ? reasons.front()
                                      : fmt::format("no zone gave a TPU VM: {}", fmt::join(reasons, "; "));
    return std::move(result_);
  }

 private:
  // "" when done (a node, a cancel, or a stop with result_.why); else why this zone failed.
  std::string stop(const std::string& why, const std::string& fix = "") {
    result_.why = why;
    result_.fix = fix;
    stopped_ = true;
    return "";
  }

  std::string plain_in(const GcloudSpec& where) {
    const auto argv = plain_create_argv(job_, where);
    if (auto error = io_.gcloud.audit("tpu-vm-create", where, argv)) return stop(*error);
    io_.say(fmt::format("creating TPU VM {} in {}: {}", where.name, where.zone, shell_display(argv)));
    result_.made = Made{where, false, "CREATING"};
    io_.status(fmt::format("TPU VM {} in {}: creating", where.name, where.zone));
    const ProcessResult r = io_.gcloud.run(argv, job_.ready_timeout, io_.cancel);
    if (io_.cancel.cancelled()) return cancelled();
    if (r.exit_code != 0) {
      const CreateFailure failure = classify_create_failure(r.err);
      // Refused before anything was made (quota, permission): nothing to delete.
      if (failure == CreateFailure::quota || failure == CreateFailure::permission) result_.made.reset();
      if (!tries_next_zone(failure)) {
        return stop(fmt::format("gcloud could not create TPU VM {} in {}: {}", where.name, where.zone, gcloud_said(r)),
                    create_failure_fix(failure, where));
      }
      // A failed create leaves no VM behind, but one it left half-made goes too.
      std::string error;
      if (!delete_made(*result_.made, io_.gcloud, job_.gcloud_timeout, error)) return stop(error);
      result_.made.reset();
      return gcloud_said(r);
    }
    return wait_node(where);
  }

  std::string queued_in(const GcloudSpec& where) {
    QueuedResource qr = describe_qr(where);
    if (qr.state == "DESCRIBE_FAILED") return stop(qr.error);
    if (qr.state != "NOT_FOUND" && (qr.pending() || qr.state == "ACTIVE")) {
      io_.say(fmt::format("queued resource {} in {} is {} already: waiting on it", where.name, where.zone, qr.state));
    } else {
      if (qr.state != "NOT_FOUND") {
        io_.say(fmt::format("queued resource {} in {} is {} from before{}: deleting it first", where.name, where.zone,
                            qr.state, qr.error.empty() ? "" : " (" + qr.error + ")"));
        Made old{where, true, qr.state};
        std::string error;
        if (!delete_made(old, io_.gcloud, job_.gcloud_timeout, error)) return stop(error);
      }
      const auto argv = gcloud_qr_create_argv(where, shape_of(job_), queued_options_of(job_.create), job_.metadata_dir);
      if (auto error = io_.gcloud.audit("queued-resource-create", where, argv)) return stop(*error);
      io_.say(fmt::format("queueing for TPU VM {} in {}: {}", where.name, where.zone, shell_display(argv)));
      result_.made = Made{where, true, "CREATING"};
      const ProcessResult r = io_.gcloud.run(argv, job_.gcloud_timeout, io_.cancel);
      if (io_.cancel.cancelled()) return cancelled();
      if (r.exit_code != 0) {
        const CreateFailure failure = classify_create_failure(r.err);
        result_.made.reset();
        if (tries_next_zone(failure)) return gcloud_said(r);
        return stop(fmt::format("gcloud could not create queued resource {} in {}: {}", where.name, where.zone,
                                gcloud_said(r)),
                    create_failure_fix(failure, where));
      }
    }
    result_.made = Made{where, true, qr.state};
    return wait_queued(where);
  }

  QueuedResource describe_qr(const GcloudSpec& where) {
    const ProcessResult r = io_.gcloud.run(gcloud_qr_describe_argv(where), std::chrono::seconds(120), CancelToken());
    QueuedResource qr;
    if (r.exit_code != 0 && is_not_found(r.err)) {
      qr.state = "NOT_FOUND";
      return qr;
    }
    try {
      if (r.exit_code == 0) return parse_queued_resource(r.out);
    } catch (const std::exception& e) {
      qr.error = e.what();
    }
    qr.state = "DESCRIBE_FAILED";
    if (qr.error.empty()) qr.error = "gcloud could not describe queued resource " + where.name + ": " + gcloud_said(r);
    return qr;
  }

  std::string wait_queued(const GcloudSpec& where) {
    const auto start = Clock::now();
    auto entered = start;
    std::string last;
    for (;;) {
      if (io_.cancel.cancelled()) return cancelled();
      QueuedResource qr = describe_qr(where);
      if (qr.state == "DESCRIBE_FAILED") return stop(qr.error);
      if (qr.state != last) {
        entered = Clock::now();
        io_.say(fmt::format("queued resource {} in {}: {}", where.name, where.zone, qr.state));
        last = qr.state;
      }
      result_.made->state = qr.state;
      io_.status(fmt::format("queued resource {} in {}: {} for {}", where.name, where.zone, qr.state,
                             format_age(seconds_since(entered))));
      if (qr.state == "NOT_FOUND") {
        result_.made.reset();
        return "the queued resource was deleted while tpurun waited on it";
      }
      if (qr.state == "FAILED" || qr.state == "SUSPENDED" || qr.state == "SUSPENDING") {
        const std::string why = fmt::format("queued resource {} is {}{}", where.name, qr.state,
                                            qr.error.empty() ? "" : fmt::format(": {} (code {})", qr.error, qr.error_code));
        return give_up_zone(why);
      }
      if (qr.state == "ACTIVE") {
        if (auto node = ready_node(where)) {
          result_.queued_resource = where.name;
          return "";
        }
      } else if (qr.state != "PROVISIONING" && job_.max_queued.count() > 0 &&
                 Clock::now() - start > job_.max_queued) {
        return give_up_zone(fmt::format("queued resource {} waited {} in {} ({} is the limit: \"max_queued\", --max-queued)",
                                        where.name, format_age(seconds_since(start)), qr.state,
                                        format_age(job_.max_queued.count())));
      }
      if (Clock::now() - start > job_.ready_timeout && qr.state == "PROVISIONING") {
        return give_up_zone(fmt::format("queued resource {} is still PROVISIONING after {}", where.name,
                                        format_age(job_.ready_timeout.count())));
      }
      std::this_thread::sleep_for(job_.poll);
    }
  }

  std::string give_up_zone(const std::string& why) {
    io_.say(fmt::format("{}: deleting it (--force)", why));
    std::string error;
    if (!delete_made(*result_.made, io_.gcloud, job_.gcloud_timeout, error)) return stop(error);
    result_.made.reset();
    return why;
  }

  std::string wait_node(const GcloudSpec& where) {
    const auto deadline = Clock::now() + job_.ready_timeout;
    for (;;) {
      if (io_.cancel.cancelled()) return cancelled();
      if (ready_node(where)) return "";
      if (Clock::now() > deadline) return give_up_zone(fmt::format("TPU VM {} is not READY after {}", where.name, format_age(job_.ready_timeout.count())));
      std::this_thread::sleep_for(job_.poll);
    }
  }

  // The node, when READY with its workers' addresses.
  std::optional<TpuNode> ready_node(const GcloudSpec& where) {
    TpuNode node;
    try {
      node = describe_node(job_.pod, where, io_.gcloud.processes);
    } catch (const std::exception&) {
      return std::nullopt;  // not there yet
    }
    io_.status(fmt::format("TPU VM {} in {}: {}", where.name, where.zone, node_state_text(node)));
    if (!node.ready() || !node.endpoint_error.empty() || node.workers.empty()) return std::nullopt;
    io_.say(fmt::format("TPU VM {} in {} is READY ({} {})", where.name, where.zone, node.workers.size(),
                        node.workers.size() == 1 ? "worker" : "workers"));
    result_.node = node;
    result_.where = where;
    result_.ready_at = Clock::now();
    return node;
  }

  std::string cancelled() {
    result_.cancelled = true;
    return "";
  }

  const ProvisionJob& job_;
  ProvisionIo& io_;
  ProvisionResult result_;
  bool stopped_ = false;
};

}  // namespace

ProvisionResult provision(const ProvisionJob& job, ProvisionIo& io) { return Provision(job, io).run(); }

bool delete_made(const Made& made, const GcloudCalls& gcloud, std::chrono::seconds limit, std::string& error) {
  const auto argv = made.queued ? gcloud_qr_delete_argv(made.where, true) : gcloud_delete_argv(made.where);
  if (auto e = gcloud.audit(made.queued ? "queued-resource-delete" : "tpu-vm-delete", made.where, argv)) {
    error = *e;
    return false;
  }
  // Not cancellable: this is what a Ctrl-C asked for.
  const ProcessResult r = gcloud.run(argv, limit, CancelToken());
  if (r.exit_code == 0 || is_not_found(r.err)) return true;
  error = fmt::format("gcloud could not delete {} {} in {}: {} (`{}` again, by hand)",
                      made.queued ? "queued resource" : "TPU VM", made.where.name, made.where.zone, gcloud_said(r),
                      shell_display(argv));
  return false;
}

std::vector<std::vector<std::string>> provision_commands(const ProvisionJob& job, const std::string& zone) {
  GcloudSpec where = job.gcloud;
  where.zone = zone;
  if (!job.create.queued) return {plain_create_argv(job, where)};
  return {gcloud_qr_create_argv(where, shape_of(job), queued_options_of(job.create), job.metadata_dir),
          gcloud_qr_describe_argv(where), gcloud_qr_delete_argv(where, true)};
}

}  // namespace tpurun
