// Kill policy as a pure function of one scan, so every rule is unit-tested
// without SSH: whose processes, which trees, which groups may be signalled as
// a whole, and what may be removed afterwards.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "tpurun/tpu/kill.hpp"

namespace tpurun {
namespace {

class TreeIndex {
 public:
  explicit TreeIndex(const LockScan& scan) {
    // Holders come first: their records also name their devices. They are in
    // the process table too, unless the scan was made without one (then the
    // plan covers the holders alone).
    for (const ScannedProcess& p : scan.holders) by_pid_[p.pid] = &p;
    if (scan.lock_holder) by_pid_.try_emplace(scan.lock_holder->pid, &*scan.lock_holder);
    for (const ScannedProcess& p : scan.processes) {
      by_pid_.try_emplace(p.pid, &p);
      children_[p.ppid].push_back(p.pid);
    }
    // The scan's own shell and everything above it (sshd, or tpurun itself
    // for a local pod) are never part of a job, whatever their group.
    for (int pid = scan.self_pid; pid > 0 && protected_.insert(pid).second;) {
      auto it = by_pid_.find(pid);
      if (it == by_pid_.end()) break;
      pid = it->second->ppid;
    }
    protected_.insert(1);
  }

  const ScannedProcess* find(int pid) const {
    auto it = by_pid_.find(pid);
    return it == by_pid_.end() ? nullptr : it->second;
  }
  bool is_protected(int pid) const { return protected_.count(pid) != 0; }

  // The seed's process group plus its descendants, owned by the seed's uid.
  // pgid 0 means the group lies outside this PID namespace: no group then.
  template <typename Add>
  void tree(const ScannedProcess& seed, const Add& add) const {
    add(seed, "");
    if (seed.pgid > 0) {
      for (const auto& [pid, p] : by_pid_) {
        if (p->pgid == seed.pgid && p->uid == seed.uid) add(*p, fmt::format("in group {}", seed.pgid));
      }
    }
    std::vector<int> stack{seed.pid};
    std::set<int> seen{seed.pid};
    while (!stack.empty()) {
      int parent = stack.back();
      stack.pop_back();
      auto kids = children_.find(parent);
      if (kids == children_.end()) continue;
      for (int pid : kids->second) {
        const ScannedProcess* p = find(pid);
        if (p == nullptr || !seen.insert(pid).second) continue;
        if (p->uid == seed.uid) add(*p, fmt::format("child of {}", parent));
        stack.push_back(pid);  // a grandchild of another uid's child is still the job's
      }
    }
  }

  const std::map<int, const ScannedProcess*>& all() const { return by_pid_; }

 private:
  std::map<int, const ScannedProcess*> by_pid_;
  std::map<int, std::vector<int>> children_;
  std::set<int> protected_;
};

// --run takes a run id or a unique prefix of one (of the caller's runs here).
std::optional<std::string> resolve_run(const LockScan& scan, const std::string& wanted, KillPlan& plan) {
  std::set<std::string> ids;
  auto note = [&](const ScannedProcess& p) {
    if (p.uid == scan.caller_uid && p.run_id) ids.insert(*p.run_id);
  };
  for (const ScannedProcess& p : scan.processes) note(p);
  for (const ScannedProcess& p : scan.holders) note(p);
  if (ids.count(wanted)) return wanted;
  std::vector<std::string> matches;
  for (const std::string& id : ids) {
    if (id.rfind(wanted, 0) == 0) matches.push_back(id);
  }
  if (matches.size() == 1) return matches.front();
  if (matches.size() > 1) plan.ambiguous_runs = matches;
  return wanted;
}

std::string holder_reason(const ScannedProcess& p) {
  if (p.devices.empty()) return "holds the libtpu lock";
  return "holds " + p.devices.front() +
         (p.devices.size() > 1 ? fmt::format(" (+{})", p.devices.size() - 1) : "");
}

}  // namespace

KillPlan plan_kill(const LockScan& scan, const KillOptions& options) {
  TreeIndex index(scan);
  std::vector<std::pair<const ScannedProcess*, std::string>> seeds;
  KillPlan plan;
  const std::optional<std::string> run =
      options.run_id ? resolve_run(scan, *options.run_id, plan) : std::nullopt;
  auto mine = [&](const ScannedProcess& p) { return p.uid == scan.caller_uid; };
  auto in_run = [&](const ScannedProcess& p) {
    return p.run_id.has_value() && plan.ambiguous_runs.empty() && (!run || *p.run_id == *run);
  };

  std::vector<const ScannedProcess*> tpu_users;
  for (const ScannedProcess& p : scan.holders) tpu_users.push_back(&p);
  if (scan.lock_holder) tpu_users.push_back(&*scan.lock_holder);
  for (const ScannedProcess* p : tpu_users) {
    if (mine(*p) && (!run || in_run(*p))) {
      seeds.emplace_back(p, holder_reason(*p));
    } else if (!mine(*p) && options.force) {
      seeds.emplace_back(p, holder_reason(*p) + ", --force");
    } else if (!mine(*p)) {
      plan.spared.push_back(*p);
    }
  }
  for (const ScannedProcess& p : scan.processes) {
    if (options.tpu_holders_only) break;
    if (mine(p) && in_run(p)) seeds.emplace_back(&p, "run " + *p.run_id);
  }

  std::map<int, Victim> victims;
  for (const auto& [seed, reason] : seeds) {
    if (index.is_protected(seed->pid)) continue;
    index.tree(*seed, [&, &reason = reason](const ScannedProcess& p, const std::string& why) {
      if (index.is_protected(p.pid) || p.pid <= 1) return;
      victims.try_emplace(p.pid, Victim{p, why.empty() ? reason : why});
    });
  }
  // A seed's own reason beats "in group"/"child of" found through another seed.
  for (const auto& [seed, reason] : seeds) {
    if (auto it = victims.find(seed->pid); it != victims.end()) it->second.reason = reason;
  }

  std::set<int> groups;
  for (const auto& [pid, v] : victims) {
    plan.victims.push_back(v);
    plan.needs_root |= v.process.uid != scan.caller_uid;
    if (v.process.pgid > 0) groups.insert(v.process.pgid);
  }
  // A group is signalled as a whole only when every member is a victim:
  // never when it holds another user's process or one we must not touch.
  for (int g : groups) {
    bool pure = !scan.processes.empty();
    for (const auto& [pid, p] : index.all()) {
      if (p->pgid == g && !victims.count(pid)) pure = false;
    }
    if (pure) plan.groups.push_back(g);
  }
  for (const ScannedProcess& p : scan.holders) {
    if (mine(p) && !victims.count(p.pid)) plan.kept_own.push_back(p);
  }
  return plan;
}

CleanupPlan plan_cleanup(const LockScan& scan) {
  CleanupPlan plan;
  const bool has_files = scan.lockfile.exists || scan.tpu_logs.has_value();
  if (!has_files) return plan;
  if (!scan.holders.empty()) {
    plan.blocked = "a process still holds a TPU device";
    return plan;
  }
  if (scan.lockfile.held) {
    plan.blocked = "a process still holds the libtpu lock";
    return plan;
  }
  // Without root, other users' open devices are invisible: only the caller's
  // own files, which nobody holds a lock on, may go.
  const bool full_view = scan.privileged && scan.denied == 0;
  auto may_remove = [&](const std::optional<FileOwner>& owner) {
    return full_view || (owner && owner->uid == scan.caller_uid);
  };
  auto foreign = [&](const std::optional<FileOwner>& owner) {
    return !owner || owner->uid != scan.caller_uid;
  };
  if (scan.lockfile.exists) {
    if (may_remove(scan.lockfile.owner)) {
      plan.remove_lockfile = true;
      plan.lock_inode = scan.lockfile.inode;
      plan.needs_root |= foreign(scan.lockfile.owner);
    } else {
      plan.blocked = "another user's file, and without sudo nobody can tell that no process holds the TPU";
    }
  }
  if (scan.tpu_logs) {
    if (may_remove(scan.tpu_logs)) {
      plan.remove_tpu_logs = true;
      plan.needs_root |= foreign(scan.tpu_logs);
    } else if (plan.blocked.empty()) {
      plan.blocked =
          "another user's directory, and without sudo nobody can tell that no process holds the TPU";
    }
  }
  return plan;
}

LockScan assume_killed(const LockScan& scan, const KillPlan& plan) {
  std::set<int> dead;
  for (const Victim& v : plan.victims) dead.insert(v.process.pid);
  LockScan after = scan;
  std::erase_if(after.holders, [&](const ScannedProcess& p) { return dead.count(p.pid) != 0; });
  std::erase_if(after.processes, [&](const ScannedProcess& p) { return dead.count(p.pid) != 0; });
  if (after.lockfile.holder_pid && dead.count(*after.lockfile.holder_pid)) {
    // libtpu deletes its lockfile on a clean exit, but a SIGKILL leaves it:
    // assume the worse, a stale file that the cleanup then removes.
    after.lockfile.held = false;
    after.lockfile.holder_pid.reset();
    after.lock_holder.reset();
  }
  return after;
}

LockScan after_cleanup(const LockScan& scan, const CleanupResult& result) {
  LockScan after = scan;
  for (const std::string& path : result.removed) {
    if (path == kLibtpuLockfile) after.lockfile = LockfileState{};
    if (path == kTpuLogsDir) after.tpu_logs.reset();
  }
  return after;
}

}  // namespace tpurun
