// One verdict per worker, from one scan. The open device file is the reliable
// signal of use; the lockfile only tells who held it last. Without root,
// other users' open files are invisible, so an unprivileged scan can prove
// "busy" but never "free".
#include "tpurun/tpu/scan.hpp"

namespace tpurun {

const char* to_string(TpuState state) {
  switch (state) {
    case TpuState::free: return "free";
    case TpuState::busy_self: return "busy-self";
    case TpuState::busy_other: return "busy-other";
    case TpuState::stale_lock: return "stale-lock";
    case TpuState::partial: return "partial";
    case TpuState::no_device: return "no-device";
    case TpuState::unreachable: return "unreachable";
    case TpuState::error: return "error";
  }
  return "?";
}

TpuState state_from_scan(const LockScan& scan) {
  bool mine = false;
  for (const ScannedProcess& p : scan.holders) {
    if (p.uid != scan.caller_uid) return TpuState::busy_other;
    mine = true;
  }
  const LockfileState& lock = scan.lockfile;
  if (lock.exists && lock.held) {
    bool holder_is_a_device_holder = false;
    for (const ScannedProcess& p : scan.holders) holder_is_a_device_holder |= lock.holder_pid == p.pid;
    if (!holder_is_a_device_holder) {
      // Held by a process we could not identify: assume it is someone else's.
      if (!scan.lock_holder || scan.lock_holder->uid != scan.caller_uid) return TpuState::busy_other;
    }
    mine = true;
  }
  if (mine) return TpuState::busy_self;
  // Nothing to hold: whatever the view of other users' processes, no process
  // can hold a device that is not there.
  if (scan.device_files == 0 && !(lock.exists && lock.held)) return TpuState::no_device;
  if (!scan.privileged || scan.denied > 0) return TpuState::partial;
  if (lock.exists) return TpuState::stale_lock;
  return TpuState::free;
}

}  // namespace tpurun
