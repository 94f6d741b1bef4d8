#pragma once
// Scan outputs as the worker prints them, and scans built by hand, for the
// parser, verdict, planning and formatting tests.
#include <string>

#include "tpurun/tpu/scan.hpp"

namespace tpurun::testing {

// Bob's trainer (pid 406) and its two children hold all four chips on a
// worker scanned as root for alice; bob's tpu_logs; the lock is bob's.
inline const std::string kBobHoldsEverything = R"(TPURUN-SCAN 1
caller 1001 alice
priv root
self 411
hold 406 /dev/accel0
hold 406 /dev/accel1
hold 406 /dev/accel10
hold 406 /dev/accel2
hold 407 /dev/accel0
hold 407 /dev/accel0
hold 408 /dev/accel3
lock 1 1002 bob 3 1 406
logs 1 1002 bob
begin pinfo
    406  1002 bob                                  406     406       1    7980 python3 train.py --forever --children 2
    407  1002 bob                                  406     406     406    7979 python3 train.py --forever --children 2
    408  1002 bob                                  406     406     406    7979 python3 train.py --forever --children 2
end pinfo
begin runid
/proc/406/environ:TPURUN_RUN_ID=20250101-run-b
/proc/407/environ:TPURUN_RUN_ID=20250101-run-b
/proc/408/environ:TPURUN_RUN_ID=20250101-run-b
end runid
denied 0
end
)";

inline ScannedProcess proc(int pid, int uid, int pgid, int ppid, std::string command = "python3 train.py",
                           std::optional<std::string> run_id = std::nullopt) {
  ScannedProcess p;
  p.pid = pid;
  p.uid = uid;
  p.user = uid == 1001 ? "alice" : uid == 1002 ? "bob" : uid == 0 ? "root" : "u" + std::to_string(uid);
  p.pgid = pgid;
  p.sid = pgid;
  p.ppid = ppid;
  p.elapsed_s = 100;
  p.command = std::move(command);
  p.run_id = std::move(run_id);
  return p;
}

inline ScannedProcess holder(ScannedProcess p, std::string device = "/dev/accel0") {
  p.devices = {std::move(device)};
  return p;
}

// A root-view scan for alice (uid 1001) with nothing on it.
inline LockScan empty_scan() {
  LockScan s;
  s.caller_uid = 1001;
  s.caller_user = "alice";
  s.privileged = true;
  s.self_pid = 900;
  return s;
}

}  // namespace tpurun::testing
