// tpurun up: the pod's TPU VM from its "create" block, set up and checked.
#include "cli/up.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "cli/doctor.hpp"
#include "cli/help_texts.hpp"
#include "tpurun/cloud/up.hpp"
#include "tpurun/fanout/printer.hpp"
#include "tpurun/pod/describe_cache.hpp"
#include "tpurun/pod/placement.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/text.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun::cli {
namespace {

UpJob make_job(const PodConfig& pod, const UpOptions& o, Context& ctx) {
  UpJob job = up_job_for(pod, ctx.env);
  job.fanout = o.fanout;
  job.keep = o.keep;
  if (!o.max_queued.empty()) {
    const auto max_queued = parse_duration(o.max_queued);
    if (max_queued.count() > 0 && max_queued < std::chrono::seconds(1)) {
      throw UsageError("--max-queued must be 0 (no limit) or at least 1s: " + o.max_queued + " would round to 0");
    }
    job.max_queued = std::chrono::duration_cast<std::chrono::seconds>(max_queued);
  }
  job.poll = parse_duration(o.poll);
  if (job.poll.count() <= 0) throw UsageError("--poll must be positive");
  if (!o.ready_timeout.empty()) {
    job.ready_timeout = std::chrono::duration_cast<std::chrono::seconds>(parse_duration(o.ready_timeout));
    if (job.ready_timeout.count() <= 0) throw UsageError("--ready-timeout must be at least 1s");
  }
  return job;
}

int finish(const UpJob& job, const UpResult& r, LinePrinter& printer, Context& ctx, bool made) {
  printer.clear_progress();
  if (!r.ok) {
    printer.note(fmt::format("up {}: {}", r.cancelled ? "interrupted" : r.stopped_by_down ? "stopped" : "failed", r.why));
    if (!r.fix.empty()) printer.note("  fix: " + r.fix);
    if (!r.left.empty()) printer.note("  left: " + r.left);
    return r.cancelled ? interrupt_exit_code() : 1;
  }
  if (r.node) keep_describe(GcloudSpec{job.gcloud.name, r.zone, job.gcloud.project, job.gcloud.internal_ip}, *r.node,
                            ctx.env);
  const auto doctor_start = std::chrono::steady_clock::now();
  DoctorOptions doctor;
  doctor.target.fanout = job.fanout;
  doctor.after_up = r.node.has_value();
  const int doctor_exit = run_doctor(doctor, ctx);
  const double doctor_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - doctor_start).count();
  const std::string where = fmt::format("TPU VM {} in {}{}", job.gcloud.name, r.zone,
                                        r.queued_resource.empty() ? "" : ", queued resource " + r.queued_resource);
  if (made) {
    printer.note(fmt::format("times: create to READY {:.1f}s; then up's own steps {:.1f}s (keys, workers answering) "
                             "and doctor {:.1f}s; setup {:.1f}s",
                             r.provision_s, r.own_s, doctor_s, r.setup_s));
  }
  if (ctx.cancel.cancelled()) {
    // Interrupted during doctor: the pod is up, and nothing was judged.
    printer.note(fmt::format("up interrupted during doctor: pod '{}' is up ({}), but not checked: `tpurun doctor` "
                             "checks it", job.pod, where));
    return interrupt_exit_code();
  }
  if (doctor_exit != 0) {
    printer.note(fmt::format("pod '{}' is up ({}), but doctor found errors (above): fix them before `tpurun stage`",
                             job.pod, where));
    return 1;
  }
  printer.note(fmt::format("pod '{}' is ready: {} ({}); `tpurun stage -- CMD` runs on it, `tpurun down --yes` "
                           "deletes it", job.pod, where, r.node ? count_of(r.node->workers.size(), "worker") : "?"));
  return 0;
}

}  // namespace

CLI::App* register_up(CLI::App& app, UpOptions& o) {
  CLI::App* cmd = app.add_subcommand("up", "Make the pod's TPU VM (queued resources, zone failover), set it up, check it");
  cmd->add_flag("--dry-run", o.dry_run, "Print the exact gcloud commands, zone by zone; create nothing");
  cmd->add_flag("--keep", o.keep,
                "When up stops early (Ctrl-C, a failure), leave what it made (a waiting queued resource) instead of "
                "deleting it");
  cmd->add_flag("--setup", o.setup, "On a pod that is READY already: run its setup script again");
  cmd->add_option("--max-queued", o.max_queued,
                  "How long one zone may keep the queued resource waiting before the next zone (default: "
                  "create.max_queued; 0: no limit)");
  cmd->add_option("--poll", o.poll, "How often to ask gcloud while waiting")->group("");
  cmd->add_option("--ready-timeout", o.ready_timeout, "How long a queued resource may stay PROVISIONING")->group("");
  cmd->add_option("--fanout", o.fanout, "At most this many workers at once")->default_str("64")->check(CLI::Range(1, 4096));
  cmd->footer(help::kUp);
  return cmd;
}

int run_up(const UpOptions& o, Context& ctx) {
  PodRequest request = ctx.pod_request;
  request.need_workers = false;
  PodConfig pod = load_pod(request, ctx.env, ctx.processes);
  UpJob job = make_job(pod, o, ctx);
  // The setup path is checked before anything is made: a typo found only
  // after the VM is READY costs a VM (and, missed, reads as an empty setup).
  if (!job.setup_script.empty() && ::access(job.setup_script.c_str(), R_OK) != 0) {
    throw UsageError(fmt::format("pod '{}': its \"setup\" script {} cannot be read: {}; nothing was made", pod.name,
                                 job.setup_script, std::strerror(errno)));
  }
  if (o.dry_run) {
    fmt::print(ctx.out, "up --dry-run: pod '{}', TPU VM {} ({}, {}, {}), {}; nothing is created\n", pod.name,
               job.gcloud.name, job.create.accelerator_type, job.create.runtime_version, create_tier(job.create),
               job.create.queued ? "through a queued resource" : "tpu-vm create");
    for (const std::string& line : up_plan(job)) fmt::print(ctx.out, "  {}\n", line);
    return 0;
  }
  std::error_code ec;
  std::filesystem::create_directories(job.state_dir, ec);
  LinePrinter printer(ctx.out, ctx.err, ctx.out_is_tty, ctx.err_is_tty);
  auto transport = ctx.make_transport(pod);
  UpIo io{ctx.processes, *transport, ctx.env, ctx.cancel, [&](const std::string& line) { printer.note(line); },
          [&](const std::string& line) { printer.progress(line); }, ctx.err_is_tty};

  const TpuNode now = describe_node_or_gone(pod.name, *pod.gcloud, ctx.processes);
  if (now.ready() && !now.workers.empty()) {
    printer.note(fmt::format("pod '{}': TPU VM {} is READY in {} already; nothing is created{}", pod.name,
                             job.gcloud.name, pod.gcloud->zone, o.setup ? "" : " (--setup runs its setup again)"));
    job.gcloud.zone = pod.gcloud->zone;
    UpResult r = o.setup ? prepare_ready_vm(job, now, true, io) : UpResult{};
    if (!o.setup) {
      r.ok = true;
      r.node = now;
    }
    r.zone = pod.gcloud->zone;
    return finish(job, r, printer, ctx, false);
  }
  if (now.state != "NOT_FOUND") {
    throw std::runtime_error(fmt::format(
        "pod '{}': TPU VM {} exists in {} and is {}: `tpurun down --yes` deletes it (and its queued resource), "
        "then `tpurun up` makes it again",
        pod.name, job.gcloud.name, pod.gcloud->zone, node_state_text(now)));
  }
  forget_describe(*pod.gcloud, ctx.env);
  printer.note(fmt::format("pod '{}': making TPU VM {} ({}, {}) {} in {}", pod.name, job.gcloud.name,
                           job.create.accelerator_type, create_tier(job.create),
                           job.create.queued ? "through a queued resource" : "with tpu-vm create",
                           fmt::join(job.create.zones, ", then ")));
  if (!job.placed_zone.empty() && job.placed_zone != job.create.zones.front()) {
    printer.note(fmt::format("{} first: an earlier up of yours sent its create there", job.placed_zone));
  }
  const UpResult r = bring_up(job, io);
  return finish(job, r, printer, ctx, true);
}

}  // namespace tpurun::cli
