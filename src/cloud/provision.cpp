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

#include <algorithm>
#include <cerrno>
#include <thread>

#include "owner_rule.hpp"
#include "queue_wait.hpp"
#include "tpurun/pod/queued_resource.hpp"
#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

long long seconds_of(Clock::duration d) { return std::chrono::duration_cast<std::chrono::seconds>(d).count(); }

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
    std::vector<std::string> zones = job_.create.zones;
    if (auto it = std::find(zones.begin(), zones.end(), job_.first_zone); it != zones.end()) {
      std::rotate(zones.begin(), it, it + 1);  // that zone first, the others in their order
    }
    for (size_t i = 0; i < zones.size(); ++i) {
      GcloudSpec where = job_.gcloud;
      where.zone = zones[i];
      where_ = where;
      const std::string reason = job_.create.queued ? queued_in(where) : plain_in(where);
      if (result_.node || result_.cancelled || stopped_) return std::move(result_);
      reasons.push_back(fmt::format("{}: {}", where.zone, reason));
      // (a reason give_up_zone has said already is not said again)
      if (i + 1 < zones.size()) {
        io_.say(reason_said_ ? fmt::format("trying {}", zones[i + 1])
                             : fmt::format("{}; trying {}", reason, zones[i + 1]));
      }
      reason_said_ = false;
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
    set_made(Made{where, false, "CREATING"});
    io_.creating(*result_.made);
    io_.status(fmt::format("TPU VM {} in {}: creating", where.name, where.zone));
    const ProcessResult r = io_.gcloud.run(argv, job_.ready_timeout, io_.cancel);
    if (io_.cancel.cancelled()) return cancelled();
    if (r.exit_code != 0) {
      const CreateFailure failure = classify_create_failure(r.err);
      // Refused before anything was made (quota, permission): nothing to delete.
      if (failure == CreateFailure::quota || failure == CreateFailure::permission) set_made(std::nullopt);
      if (!tries_next_zone(failure)) {
        return stop(fmt::format("gcloud could not create TPU VM {} in {}: {}", where.name, where.zone, gcloud_said(r)),
                    create_failure_fix(failure, where));
      }
      // A failed create leaves no VM behind, but one it left half-made goes too.
      std::string error;
      if (!delete_made(*result_.made, io_.gcloud, job_.gcloud_timeout, error)) return stop(error);
      set_made(std::nullopt);
      return gcloud_said(r);
    }
    return wait_node(where);
  }

  std::string queued_in(const GcloudSpec& where) {
    QueuedResource qr = describe_qr(where);
    if (qr.state == "DESCRIBE_FAILED") return stop(qr.error);
    switch (on_found(qr, caller_label())) {
      case FoundAction::refuse:
        return stop(fmt::format("{} is there already: this up neither waits on it nor deletes it{}", found_text(qr, where.zone),
                                qr.error.empty() ? "" : " (" + qr.error + ")"),
                    labelled_owner(qr).empty() ? fmt::format("`{}` deletes it, if it is yours to delete",
                                                             shell_display(gcloud_qr_delete_argv(where, true)))
                                               : fmt::format("ask {} (`tpurun down` as them deletes it), or give the "
                                                             "pod's TPU VM another name", labelled_owner(qr)));
      case FoundAction::wait:
        // Found, not made: waited on, and left in place whatever happens.
        io_.say(fmt::format("{} is there already: waiting on it (this up did not make it, and will not delete it)",
                            found_text(qr, where.zone)));
        result_.found = Made{where, true, qr.state};
        return wait_queued(where);
      case FoundAction::delete_first: {
        io_.say(fmt::format("queued resource {} in {} is {} from before{}: deleting it first", where.name, where.zone,
                            qr.state, qr.error.empty() ? "" : " (" + qr.error + ")"));
        std::string error;
        if (!delete_made(Made{where, true, qr.state}, io_.gcloud, job_.gcloud_timeout, error)) return stop(error);
        break;
      }
      case FoundAction::create:
        break;
    }
    const auto argv = gcloud_qr_create_argv(where, shape_of(job_), queued_options_of(job_.create), job_.metadata_dir);
    if (auto error = io_.gcloud.audit("queued-resource-create", where, argv)) return stop(*error);
    io_.say(fmt::format("queueing for TPU VM {} in {}: {}", where.name, where.zone, shell_display(argv)));
    // Not cancelled: a create stopped half-way may still be made by the API,
    // and only its answer says what there is to delete.
    set_made(Made{where, true, "CREATING"});
    io_.creating(*result_.made);
    const ProcessResult r = io_.gcloud.run(argv, job_.gcloud_timeout, CancelToken());
    if (r.exit_code != 0) {
      // The API may have made it all the same (a 429 or a 503 on gcloud's
      // poll of the operation): what exists decides.
      const QueuedResource after = describe_qr(where);
      if (after.state == "DESCRIBE_FAILED") return stop(fmt::format("gcloud's create said {}, and {}", gcloud_said(r), after.error));
      switch (after_create_error(after, r.err, caller_label())) {
        case AfterCreateError::made:
          io_.say(fmt::format("gcloud's create said {}, but queued resource {} in {} is there ({}): this up made it",
                              gcloud_said(r), where.name, where.zone, after.state));
          break;
        case AfterCreateError::not_ours:
          set_made(std::nullopt);
          return stop(fmt::format("gcloud could not create queued resource {} in {} ({}), and {} is there: this up "
                                  "neither waits on it nor deletes it", where.name, where.zone, gcloud_said(r),
                                  found_text(after, where.zone)));
        case AfterCreateError::nothing_made: {
          set_made(std::nullopt);
          const CreateFailure failure = classify_create_failure(r.err);
          if (tries_next_zone(failure)) return gcloud_said(r);
          return stop(fmt::format("gcloud could not create queued resource {} in {}: {}", where.name, where.zone,
                                  gcloud_said(r)),
                      create_failure_fix(failure, where));
        }
      }
    }
    if (io_.cancel.cancelled()) return cancelled();
    return wait_queued(where);
  }

  std::string caller_label() const {
    auto it = job_.labels.find("tpurun-user");
    return it == job_.labels.end() ? "" : it->second;
  }

  void set_made(std::optional<Made> made) {
    result_.made = std::move(made);
    set_interrupt_last_words(result_.made ? "tpurun: " + left_behind_text(*result_.made) + "\n" : "");
  }

  // A describe, tried again with backoff while the API answers with a
  // transient error (429, 5xx, a timeout): one bad answer never gives up the
  // place in the queue. DESCRIBE_FAILED (qr.error) once it lasted too long
  // or was not transient.
  QueuedResource describe_qr(const GcloudSpec& where) {
    Backoff backoff(job_.retry_first, std::chrono::milliseconds(30000), job_.transient_limit);
    for (;;) {
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
      const auto wait = is_transient(r) && !io_.cancel.cancelled() ? backoff.failed(Clock::now()) : std::nullopt;
      if (wait) {
        io_.say(fmt::format("gcloud could not describe queued resource {} ({}): trying again in {}", where.name,
                            gcloud_said(r), format_duration_ms(wait->count())));
        if (pause(*wait)) continue;
      }
      qr.state = "DESCRIBE_FAILED";
      if (qr.error.empty()) qr.error = "gcloud could not describe queued resource " + where.name + ": " + gcloud_said(r);
      return qr;
    }
  }

  // Sleeps `d`, false at once when cancelled.
  bool pause(std::chrono::milliseconds d) {
    const auto until = Clock::now() + d;
    while (Clock::now() < until) {
      if (io_.cancel.cancelled()) return false;
      std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(100)));
    }
    return !io_.cancel.cancelled();
  }

  std::string wait_queued(const GcloudSpec& where) {
    QueueWaitLimits limits;
    limits.max_queued = job_.max_queued;
    limits.ready_timeout = job_.ready_timeout;
    limits.poll = job_.poll;
    limits.poll_max = std::min(std::chrono::milliseconds(30000), job_.poll * 15);
    limits.heartbeat = io_.live_status ? std::chrono::seconds(0) : job_.heartbeat;
    QueueWait wait(limits, Clock::now());
    for (;;) {
      if (io_.cancel.cancelled()) return cancelled();
      QueuedResource qr = describe_qr(where);
      if (io_.cancel.cancelled()) return cancelled();
      if (qr.state == "DESCRIBE_FAILED") return stop(qr.error);
      const auto now = Clock::now();
      if (wait.seen(qr.state, now)) {
        io_.say(fmt::format("queued resource {} in {}: {}", where.name, where.zone, qr.state));
      } else if (wait.heartbeat_due(now)) {
        io_.say(fmt::format("queued resource {} in {}: still {} after {}", where.name, where.zone, qr.state,
                            format_age(seconds_of(wait.in_state(now)))));
      }
      if (result_.made) result_.made->state = qr.state;
      if (result_.found) result_.found->state = qr.state;
      io_.status(fmt::format("queued resource {} in {}: {} for {}", where.name, where.zone, qr.state,
                             format_age(seconds_of(wait.in_state(now)))));
      if (qr.state == "NOT_FOUND") {
        set_made(std::nullopt);
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
      }
      if (wait.over_max_queued(now)) {
        return give_up_zone(fmt::format("queued resource {} waited {} in {} ({} is the limit: \"max_queued\", --max-queued)",
                                        where.name, format_age(seconds_of(wait.queued_for(now))), qr.state,
                                        format_age(job_.max_queued.count())));
      }
      if (wait.over_ready_timeout(now)) {
        return give_up_zone(fmt::format("queued resource {} is still {} after {} since it began PROVISIONING", where.name,
                                        qr.state, format_age(job_.ready_timeout.count())));
      }
      if (!pause(wait.next_poll())) return cancelled();
    }
  }

  // This zone's queued resource will not do: deleted when this up made it;
  // one it found is left alone, named, and `up` stops (another zone would
  // make a second VM of the same name).
  std::string give_up_zone(const std::string& why) {
    if (!result_.made) {
      return stop(fmt::format("{}: this up did not make it, so it is left in place", why),
                  fmt::format("`{}` deletes it", shell_display(gcloud_qr_delete_argv(where_, true))));
    }
    io_.say(fmt::format("{}: deleting it (--force)", why));
    reason_said_ = true;
    std::string error;
    if (!delete_made(*result_.made, io_.gcloud, job_.gcloud_timeout, error)) return stop(error);
    set_made(std::nullopt);
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
  bool reason_said_ = false;  // this zone's reason is on the screen already
  GcloudSpec where_;  // the zone being tried
};

}  // namespace

ProvisionResult provision(const ProvisionJob& job, ProvisionIo& io) { return Provision(job, io).run(); }

bool delete_made(const Made& made, const GcloudCalls& gcloud, std::chrono::seconds limit, std::string& error) {
  const auto argv = made.queued ? gcloud_qr_delete_argv(made.where, true) : gcloud_delete_argv(made.where);
  if (auto e = gcloud.audit(made.queued ? "queued-resource-delete" : "tpu-vm-delete", made.where, argv)) {
    error = *e;
    return false;
  }
  // Not cancellable: this is what a Ctrl-C asked for. A transient error (a
  // 429, an outage) is tried again, with backoff, for `limit`.
  Backoff backoff(std::chrono::milliseconds(2000), std::chrono::milliseconds(30000), limit);
  for (;;) {
    const ProcessResult r = gcloud.run(argv, limit, CancelToken());
    if (r.exit_code == 0 || is_not_found(r.err)) return true;
    // A delete the API took before an error reached gcloud: it is going.
    if (made.queued && r.err.find("state is DELETING") != std::string::npos) return true;
    const auto wait = is_transient(r) ? backoff.failed(std::chrono::steady_clock::now()) : std::nullopt;
    if (wait) {
      std::this_thread::sleep_for(*wait);
      continue;
    }
    error = fmt::format("gcloud could not delete {} {} in {}: {} (`{}` again, by hand)",
                        made.queued ? "queued resource" : "TPU VM", made.where.name, made.where.zone, gcloud_said(r),
                        shell_display(argv));
    return false;
  }
}

std::string left_behind_text(const Made& made) {
  const auto argv = made.queued ? gcloud_qr_delete_argv(made.where, true) : gcloud_delete_argv(made.where);
  return fmt::format("{} {} in {} was made by this up and may be left: `{}` deletes it",
                     made.queued ? "queued resource" : "TPU VM", made.where.name, made.where.zone, shell_display(argv));
}

std::vector<std::vector<std::string>> provision_commands(const ProvisionJob& job, const std::string& zone) {
  GcloudSpec where = job.gcloud;
  where.zone = zone;
  if (!job.create.queued) return {plain_create_argv(job, where)};
  return {gcloud_qr_create_argv(where, shape_of(job), queued_options_of(job.create), job.metadata_dir),
          gcloud_qr_describe_argv(where), gcloud_qr_delete_argv(where, true)};
}

}  // namespace tpurun
