// doctor's rules: from facts to problems with their fixes. Pure.
#include "tpurun/doctor/doctor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "tpurun/doctor/uids.hpp"
#include "tpurun/fanout/gather.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

using Severity = Finding::Severity;
constexpr double kSkewWarnS = 2.0;
constexpr long long kTmpWarnKiB = 1024 * 1024;

class Findings {
 public:
  void add(Severity s, const std::string& check, int worker, std::string problem, std::string fix) {
    auto key = std::make_tuple(s == Severity::error ? 0 : 1, check, problem, fix);
    auto it = index_.find(key);
    if (it == index_.end()) {
      index_[key] = out_.size();
      out_.push_back({s, check, {}, std::move(problem), std::move(fix)});
      it = index_.find(key);
    }
    if (worker >= 0) out_[it->second].workers.push_back(worker);
  }
  std::vector<Finding> take() {
    std::stable_sort(out_.begin(), out_.end(),
                     [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
    return std::move(out_);
  }

 private:
  std::map<std::tuple<int, std::string, std::string, std::string>, size_t> index_;
  std::vector<Finding> out_;
};

constexpr long long kLocalRootWarnKiB = 2ll * 1024 * 1024;  // 2 GiB: a snapshot and a run's logs

const char* fs_of(const std::vector<RootFacts>& roots, const std::string& path) {
  for (const RootFacts& r : roots) {
    if (r.path == path) return r.fs_type.c_str();
  }
  return "?";
}

void judge_worker(const LocalFacts& local, const WorkerFacts& w, Findings& out) {
  const int i = w.worker.index;
  if (w.error) {
    out.add(Severity::error, "reach", i, w.error->message,
            w.error->kind == ErrorKind::auth ? "put your key on the worker (gcloud pods: tpurun hostkeys --import)"
                                             : "check that the worker is up and its sshd answers");
    return;
  }
  const bool same_ids = local.uid < 0 || (w.uid == local.uid && w.gid == local.gid);
  if (!same_ids) {
    out.add(Severity::error, "uid",  i,
            fmt::format("{} is uid {} gid {} there but uid {} gid {} here: NFS owns files by number, so the "
                        "workers cannot enter your 0700 dirs on the shared mount",
                        w.user.empty() ? local.user : w.user, w.uid, w.gid, local.uid, local.gid),
            uid_fixes(local.user, local.uid, local.gid));
  }
  for (const RootFacts& root : w.roots) {
    if (!root.present) {
      out.add(Severity::error, "mount", i, fmt::format("{} does not exist there", root.path),
              "mount the shared NFS volume on the worker at the same path as here (e.g. `tpurun exec -- sudo mount "
              "-o vers=3 SERVER:/SHARE MOUNTPOINT`, as your setup script does)");
    } else if (root.fs_type != fs_of(local.roots, root.path)) {
      out.add(Severity::warning, "mount", i,
              fmt::format("{} is {} there but {} here", root.path, root.fs_type, fs_of(local.roots, root.path)),
              "it should be the same shared mount everywhere");
    }
  }
  const bool roots_present = std::all_of(w.roots.begin(), w.roots.end(), [](const RootFacts& r) { return r.present; });
  using P = WorkerFacts::Probe;
  if (roots_present && same_ids && (w.probe == P::missing || w.probe == P::different)) {
    out.add(Severity::error, "mount", i,
            "a file written here on the shared mount is not visible there: the roots are a different directory "
            "(another mount, or a local dir where the NFS mount should be)",
            "mount the same NFS share at the same path on the worker");
  } else if (roots_present && same_ids && w.probe == P::unreadable) {
    out.add(Severity::error, "mount", i, "a file written here on the shared mount cannot be read there",
            "check the share's export options (root_squash, all_squash) and that your uid is the same");
  }
  if (!w.sudo) {
    out.add(Severity::warning, "sudo", i,
            "no passwordless sudo: status shows a partial view (other users' processes are invisible) and "
            "kill --force cannot work",
            "ask an admin for passwordless sudo (google-sudoers; with OS Login the roles/compute.osAdminLogin role)");
  }
  if (w.devices.empty()) {
    out.add(Severity::error, "devices", i, "no TPU device file (/dev/accel*, /dev/vfio/N) on the worker",
            "is it a TPU VM, with a TPU runtime image? `gcloud compute tpus tpu-vm describe` shows its "
            "acceleratorType and runtimeVersion");
  }
  if (w.tpu && w.tpu->scan) {
    const LockScan& s = *w.tpu->scan;
    switch (w.tpu->state) {
      case TpuState::stale_lock:
        out.add(Severity::warning, "tpu", i,
                fmt::format("a stale /tmp/libtpu_lockfile (left by {}) blocks every other user",
                            s.lockfile.owner ? s.lockfile.owner->user : "?"),
                "tpurun kill --worker N removes it once nothing holds the TPU");
        break;
      case TpuState::busy_other:
        out.add(Severity::warning, "tpu", i, "another user's job holds the TPU", "see tpurun status");
        break;
      case TpuState::busy_self:
        out.add(Severity::warning, "tpu", i, "a job of yours holds the TPU", "tpurun kill stops it");
        break;
      default:
        break;
    }
  }
  if (w.clock_offset_s && std::fabs(*w.clock_offset_s) - w.clock_uncertainty_s > kSkewWarnS) {
    out.add(Severity::warning, "clock", i,
            fmt::format("its clock is {:.0f}s {} this host's: log times and claim expiry disagree",
                        std::fabs(*w.clock_offset_s), *w.clock_offset_s > 0 ? "ahead of" : "behind"),
            "sync the clocks (sudo systemctl restart chrony, or systemd-timesyncd)");
  }
  if (w.local_root_writable == 0) {
    out.add(Severity::error, "disk", i, "the local root (code and logs, no shared mount) cannot be written there",
            "check the worker's home dir, or set \"local_root\" to a dir you can write (docs/config.md)");
  } else if (w.local_root_writable == 1 && w.local_root_free_kib >= 0 && w.local_root_free_kib < kLocalRootWarnKiB) {
    out.add(Severity::warning, "disk", i,
            fmt::format("only {} MiB free for code and logs (no shared mount)", w.local_root_free_kib / 1024),
            "free space on the worker's disk (tpurun gc; old checkpoints)");
  }
  if (w.tmp_free_kib >= 0 && w.tmp_free_kib < kTmpWarnKiB) {
    out.add(Severity::warning, "tmp", i, fmt::format("only {} MiB free in /tmp", w.tmp_free_kib / 1024),
            fmt::format("libtpu and compilers write there: remove old files in /tmp (tpurun kill removes a stale "
                        "{})", worker::kTpuLogsDir));
  }
}

// One warning per package whose version is not the same on every worker that
// said: naming the versions and, as its workers, those not on the most common one.
void judge_versions(const std::vector<WorkerFacts>& workers, std::vector<Finding>& out) {
  for (size_t k = 0; k < 4; ++k) {
    std::map<std::string, std::vector<int>> by_version;
    std::string name;
    for (const WorkerFacts& w : workers) {
      if (w.error || w.versions.size() <= k) continue;
      name = w.versions[k].first;
      by_version[w.versions[k].second].push_back(w.worker.index);
    }
    if (by_version.size() < 2) continue;
    auto common = by_version.begin();
    for (auto it = by_version.begin(); it != by_version.end(); ++it) {
      if (it->second.size() > common->second.size()) common = it;
    }
    std::vector<std::string> parts;
    std::vector<int> differ;
    for (const auto& [version, on] : by_version) {
      parts.push_back(fmt::format("{} on {}", version == "-" ? "none" : version, compact_worker_set(on)));
      if (version != common->first) differ.insert(differ.end(), on.begin(), on.end());
    }
    std::sort(differ.begin(), differ.end());
    out.push_back({Severity::warning, "versions", differ,
                   fmt::format("{} is not the same version on every worker ({}): a pod with mixed versions hangs "
                               "or fails (jax#10218)",
                               name, fmt::join(parts, ", ")),
                   name == "python3"
                       ? std::string("give every worker the same image (one runtime_version), or install one python3")
                       : fmt::format("install one version everywhere in the pod's setup script (e.g. pip install "
                                     "{}=={}), then `tpurun up --setup`",
                                     name, common->first)});
  }
}

}  // namespace

std::vector<Finding> judge(const LocalFacts& local, const std::vector<WorkerFacts>& workers) {
  Findings out;
  for (const std::string& p : local.gcloud_problems) out.add(Severity::error, "gcloud", -1, p, "");
  for (const std::string& p : local.root_problems) out.add(Severity::error, "roots", -1, p, "");
  for (const RootFacts& r : local.roots) {
    if (!r.present) {
      out.add(Severity::error, "roots", -1, fmt::format("{} does not exist here", r.path),
              "create it on the shared mount (an admin: sudo install -d -m 1777 " + r.path + ")");
    }
  }
  if (!local.probe_problem.empty()) {
    out.add(Severity::warning, "mount", -1,
            "no probe file could be written (" + local.probe_problem +
                "), so whether the workers see the same files was not checked",
            "fix the logs root first, then run `tpurun doctor` again");
  }
  for (const WorkerFacts& w : workers) judge_worker(local, w, out);
  std::vector<Finding> findings = out.take();
  judge_versions(workers, findings);
  return findings;
}

}  // namespace tpurun
