// down: the facts (describe the VM and its queued resource, the claims, a TPU
// scan of the workers), the rules, then one delete and a describe to see it
// gone. The rules are recreate's (runs/recreate/recreate_rules), plus the
// maker: `up` labels what it makes with tpurun-user.
#include "tpurun/cloud/down.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <thread>

#include "tpurun/cloud/gcloud_call.hpp"
#include "tpurun/board/claim_check.hpp"
#include "tpurun/cloud/up.hpp"
#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/tpu/holders.hpp"
#include "tpurun/tpu/kill_audit.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun {
namespace {

std::string basename(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

// The queued resource: the one the VM names, else tpurun's own name for it (the VM's).
QueuedResource describe_qr(const GcloudSpec& spec, ProcessRunner& processes, std::string& error) {
  QueuedResource qr;
  const ProcessResult r = processes.run_bounded(gcloud_qr_describe_argv(spec), std::chrono::seconds(120), CancelToken());
  if (r.exit_code != 0) {
    qr.state = "NOT_FOUND";
    if (!is_not_found(r.err)) error = "gcloud could not describe queued resource " + spec.name + ": " + gcloud_said(r);
    return qr;
  }
  try {
    return parse_queued_resource(r.out);
  } catch (const std::exception& e) {
    error = e.what();
    qr.state = "UNKNOWN";
    return qr;
  }
}

}  // namespace

DownJob down_job_for(const PodConfig& pod, const Environment& env, bool force) {
  DownJob job;
  job.pod = pod.name;
  job.user = local_user(env);
  job.gcloud = *pod.gcloud;
  job.logs_root = pod.logs_root;
  job.device_globs = pod.device_globs;
  job.audit_path = default_audit_path(env);
  job.force = force;
  return job;
}

DownFacts gather_down_facts(const DownJob& job, DownIo& io) {
  DownFacts f;
  try {
    f.node = describe_node_or_gone(job.pod, job.gcloud, io.processes);
  } catch (const std::exception& e) {
    f.node.state = "UNKNOWN";
    f.describe_error = e.what();
    return f;
  }
  GcloudSpec qr_spec = job.gcloud;
  if (f.node.state != "NOT_FOUND") {
    try {
      const std::string named = read_tpu_vm_shape(f.node.json).queued_resource;
      if (!named.empty()) qr_spec.name = basename(named);
    } catch (const std::exception&) {
    }
  }
  f.qr = describe_qr(qr_spec, io.processes, f.describe_error);
  f.made_by = f.node.state != "NOT_FOUND" ? made_by(f.node.json) : "";
  if (f.made_by.empty() && f.qr.labels.count("tpurun-user")) f.made_by = f.qr.labels.at("tpurun-user");
  if (!job.logs_root.empty()) f.claimed_by = claimed_by_another(job.logs_root, job.pod, job.user, io.say);
  if (f.node.ready() && !f.node.workers.empty()) {
    f.foreign_tpu_users =
        other_users_on_tpu(scan_workers(f.node.workers, io.transport, job.fanout, io.cancel, job.device_globs));
  }
  return f;
}

bool nothing_left(const DownFacts& f) { return f.node.state == "NOT_FOUND" && f.qr.state == "NOT_FOUND"; }

DownFacts find_down_facts(DownJob& job, const std::vector<std::string>& zones, DownIo& io) {
  DownFacts facts = gather_down_facts(job, io);
  if (!nothing_left(facts) || !facts.describe_error.empty()) return facts;
  for (const std::string& zone : zones) {
    if (zone == job.gcloud.zone) continue;
    DownJob there = job;
    there.gcloud.zone = zone;
    DownFacts found = gather_down_facts(there, io);
    if (!nothing_left(found) || !found.describe_error.empty()) {
      job = there;
      return found;
    }
  }
  return facts;
}

std::string down_facts_text(const DownFacts& f, const GcloudSpec& spec) {
  std::string text = fmt::format("TPU VM {} in {}: {}", spec.name, spec.zone,
                                 f.node.state == "NOT_FOUND" ? "no VM" : node_state_text(f.node));
  if (f.qr.state != "NOT_FOUND") text += fmt::format("; queued resource {}: {}", f.qr.name, f.qr.state);
  if (!f.made_by.empty()) text += fmt::format(" (made by tpurun for {})", f.made_by);
  return text;
}

std::optional<std::string> down_refusal(const DownFacts& f, const std::string& user, bool force) {
  if (!f.describe_error.empty()) return "gcloud could not say what is there: " + f.describe_error;
  if (force) return std::nullopt;
  if (f.claimed_by) return "the pod is claimed by " + *f.claimed_by;
  if (!f.foreign_tpu_users.empty()) {
    return fmt::format("another user holds a TPU on its workers: {}", fmt::join(f.foreign_tpu_users, "; "));
  }
  if (f.made_by.empty()) {
    return "tpurun did not make this TPU VM (it has no tpurun-user label): it may be someone else's; --force "
           "deletes it anyway";
  }
  const std::string mine = up_labels(user).begin()->second;
  if (f.made_by != mine) return fmt::format("tpurun made it for {}, not for you; --force deletes it anyway", f.made_by);
  return std::nullopt;
}

std::vector<std::vector<std::string>> down_commands(const DownFacts& f, const GcloudSpec& gcloud) {
  if (f.qr.state != "NOT_FOUND") {
    GcloudSpec qr = gcloud;
    qr.name = f.qr.name.empty() ? gcloud.name : f.qr.name;
    return {gcloud_qr_delete_argv(qr, true)};
  }
  if (f.node.state != "NOT_FOUND") return {gcloud_delete_argv(gcloud)};
  return {};
}

std::string tear_down(const DownJob& job, const DownFacts& facts, DownIo& io) {
  const GcloudCalls gcloud{io.processes, job.audit_path, job.user, job.pod};
  for (const auto& argv : down_commands(facts, job.gcloud)) {
    const bool queued = argv[3] == "queued-resources";
    if (auto error = gcloud.audit(queued ? "queued-resource-delete" : "tpu-vm-delete", job.gcloud, argv)) return *error;
    io.say(fmt::format("deleting {}: {}", queued ? "the queued resource and its TPU VM" : "the TPU VM", shell_display(argv)));
    const ProcessResult r = gcloud.run(argv, job.gcloud_timeout, CancelToken());
    if (r.exit_code != 0 && !is_not_found(r.err)) return "gcloud could not delete it: " + gcloud_said(r);
  }
  // Until it is gone: a delete's operation may end before the VM does.
  const auto deadline = std::chrono::steady_clock::now() + job.gcloud_timeout;
  for (;;) {
    TpuNode node;
    try {
      node = describe_node_or_gone(job.pod, job.gcloud, io.processes);
    } catch (const std::exception& e) {
      return e.what();
    }
    if (node.state == "NOT_FOUND") return "";
    if (std::chrono::steady_clock::now() > deadline) {
      return fmt::format("TPU VM {} is still there ({})", job.gcloud.name, node.state);
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace tpurun
