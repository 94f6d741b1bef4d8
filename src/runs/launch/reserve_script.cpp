// The worker's side of a reservation: worker/reserve.sh (sent to `sh -s`,
// after a header with the lock, the run and the TPU scan), which takes the
// lock, scans the TPU under it, says so, and waits for the launch script or
// for EOF. Its answer is parsed here too.
#include <fmt/format.h>

#include <sstream>

#include "runs/launch/reservation.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {

std::string reserve_script(const ReserveSpec& spec) {
  std::ostringstream s;
  s << "lock=" << shell_quote(spec.lock_path) << "\n";
  s << "run=" << shell_quote(spec.run_id.empty() ? "-" : spec.run_id) << "\n";
  s << "required=" << (spec.required ? 1 : 0) << " scan=" << (spec.scan ? 1 : 0) << " wait=" << spec.wait_s
    << " hold=" << spec.hold_s << "\n";
  // When the lock was taken, for its holder record: this host's clock, so
  // that the worker runs no `date` for it (a process start on every worker).
  s << "now=" << shell_quote(format_utc_time(std::chrono::system_clock::now())) << "\n";
  if (spec.scan) {
    // The TPU scan (worker/scan.sh), as `status` runs it: as root where sudo
    // lets us, else as the user; its own script on its stdin each time.
    const RemoteCommand scan = build_scan_command(ScanRequest{spec.device_globs, false});
    s << "tpurun_scan_here() {\n  ( " << scan.command_line << " ) <<'TPURUN_SCAN_EOF'\n"
      << scan.stdin_data << (scan.stdin_data.empty() || scan.stdin_data.back() == '\n' ? "" : "\n")
      << "TPURUN_SCAN_EOF\n}\n";
  }
  s << worker::kReserveSh;
  return s.str();
}

bool reserve_answer_complete(const std::string& out) {
  return out.find(worker::kReserveReady) != std::string::npos ||
         out.find(worker::kReserveBusy) != std::string::npos ||
         out.find(worker::kReserveRefused) != std::string::npos;
}

ReserveAnswer parse_reserve_answer(const std::string& out) {
  const std::string refused = std::string(worker::kReserveRefused) + " ";
  const std::string holder = std::string(worker::kReserveHolder) + " ";
  ReserveAnswer a;
  std::istringstream lines(out);
  std::string line;
  std::string scan_text;
  bool in_scan = false;
  while (std::getline(lines, line)) {
    if (line == worker::kReserveOk) {
      a.state = ReserveAnswer::State::ok;
      in_scan = true;
    } else if (line == worker::kReserveBusy) {
      a.state = ReserveAnswer::State::busy;
      in_scan = true;
    } else if (line.starts_with(refused)) {
      a.state = ReserveAnswer::State::refused;
      a.why = line.substr(refused.size());
    } else if (line.starts_with(holder)) {
      std::istringstream f(line.substr(holder.size()));
      ReservationHolder h;
      if (f >> h.pid >> h.run_id >> h.user >> h.since) a.holders.push_back(h);
    } else if (line == worker::kReserveReady) {
      a.ready = true;
      in_scan = false;
    } else if (in_scan) {
      scan_text += line + "\n";
    }
  }
  a.scan_text = std::move(scan_text);
  return a;
}

std::string holder_text(const ReservationHolder& h) {
  const std::string run = h.run_id == "-" ? "a stage" : "run " + h.run_id;
  return fmt::format("{}'s {} (pid {}, since {})", h.user, run, h.pid, h.since);
}

}  // namespace tpurun
