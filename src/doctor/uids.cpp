#include "tpurun/doctor/uids.hpp"

#include <fmt/format.h>

#include <map>

#include "tpurun/fanout/gather.hpp"

namespace tpurun {

std::string uid_fixes(const std::string& user, int uid, int gid) {
  return fmt::format(
      "Fix one of:\n"
      "  - OS Login: one POSIX uid per account on every VM: gcloud compute project-info add-metadata --metadata "
      "enable-oslogin=TRUE, on this dev VM too; a local {} that the guest agent already made keeps its uid "
      "(local accounts come before OS Login), so remove it first on each VM, as another sudo user: sudo "
      "userdel {};\n"
      "  - the same numbers everywhere: on each worker whose numbers differ, as another sudo user (usermod refuses "
      "a user with running processes): sudo groupmod -g {} {} && sudo usermod -u {} -g {} {}",
      user, user, gid, user, uid, gid, user);
}

std::string uid_mismatch(const std::string& user, int uid, int gid, const std::vector<WorkerScanResult>& scans) {
  if (uid < 0) return "";
  std::map<std::pair<int, int>, std::vector<int>> others;  // (uid, gid) -> workers
  std::string name = user;
  for (const WorkerScanResult& r : scans) {
    if (!r.scan || r.scan->caller_uid < 0) continue;
    const int their_gid = r.scan->caller_gid >= 0 && gid >= 0 ? r.scan->caller_gid : gid;
    if (r.scan->caller_uid == uid && their_gid == gid) continue;
    others[{r.scan->caller_uid, their_gid}].push_back(r.worker.index);
    if (!r.scan->caller_user.empty()) name = r.scan->caller_user;
  }
  if (others.empty()) return "";
  std::string lines;
  for (const auto& [ids, workers] : others) {
    lines += fmt::format("\n  {}: {} is uid {} gid {} there", compact_worker_set(workers), name, ids.first, ids.second);
  }
  return fmt::format(
      "not launching: you are uid {} gid {} on this host, but{}\n"
      "The shared (NFS) mount owns files by number, so on those workers your snapshot and log dirs (mode 0700) "
      "belong to someone else and cannot be entered. Without OS Login each VM numbers its users in the order they "
      "arrive, so this happens. {}\n(`tpurun doctor` checks this on every worker.)",
      uid, gid, lines, uid_fixes(name, uid, gid));
}

}  // namespace tpurun
