// Reading the scan's line protocol (worker/scan.sh; docs/protocols.md).
// The output may hold anything a process put in its argv, so parsing is
// strict about structure and never trusts a field's shape.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "tpurun/tpu/scan.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

constexpr std::string_view kHeader = worker::kScanHeader;

// Splits off `count` whitespace-separated fields; `rest` gets what follows
// the last one (leading blanks removed). False when there are fewer fields.
bool split_fields(std::string_view line, size_t count, std::vector<std::string_view>& fields,
                  std::string_view* rest = nullptr) {
  fields.clear();
  size_t i = 0;
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (fields.size() < count) {
    while (i < line.size() && blank(line[i])) ++i;
    if (i == line.size()) return false;
    size_t start = i;
    while (i < line.size() && !blank(line[i])) ++i;
    fields.push_back(line.substr(start, i - start));
  }
  while (i < line.size() && blank(line[i])) ++i;
  if (rest != nullptr) {
    *rest = line.substr(i);
  } else if (i != line.size()) {
    return false;  // trailing fields nobody asked for
  }
  return true;
}

template <typename Int>
bool to_int(std::string_view s, Int& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::string sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) out.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Natural order, so /dev/accel10 sorts after /dev/accel2.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string_view na(a.data() + i, ie - i), nb(b.data() + j, je - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

class ScanParser {
 public:
  Result<LockScan, std::string> parse(std::string_view output) {
    std::vector<std::string_view> lines;
    for (size_t start = 0; start <= output.size();) {
      size_t nl = output.find('\n', start);
      if (nl == std::string_view::npos) nl = output.size();
      lines.push_back(output.substr(start, nl - start));
      start = nl + 1;
    }
    // Anything before the header is noise from the login shell's rc files.
    auto header = std::find(lines.begin(), lines.end(), kHeader);
    if (header == lines.end()) return fail(0, fmt::format("no '{}' header in the scan's output", kHeader));
    size_t n = static_cast<size_t>(header - lines.begin()) + 1;
    std::string block;  // inside "begin X" ... "end X": lines of X without the keyword
    for (; n < lines.size(); ++n) {
      const std::string_view line = lines[n];
      std::string error;
      if (!block.empty()) {
        if (line == "end " + block) {
          block.clear();
        } else if (block == "runid") {
          run_id_line(line);
        } else if (!line.empty()) {
          error = record(block + " " + std::string(line));
        }
      } else if (line == "end") {
        return finish();
      } else if (line.rfind("begin ", 0) == 0) {
        block = std::string(line.substr(6));
        if (block != "pinfo" && block != "proc" && block != "runid" && block != "start")
          error = "unknown block '" + sanitize(block) + "'";
      } else if (!line.empty()) {
        error = record(line);
      }
      if (!error.empty()) return fail(n + 1, error);
    }
    return fail(0, "the scan's output ended early (no 'end' line): the scan was cut off");
  }

 private:
  Unexpected<std::string> fail(size_t line, const std::string& message) {
    if (line == 0) return unexpected(message);
    return unexpected(fmt::format("scan output line {}: {}", line, message));
  }

  std::string record(std::string_view line) {
    std::string_view rest;
    auto space = line.find(' ');
    std::string_view kind = line.substr(0, space);
    std::string_view args = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    std::vector<std::string_view>& f = fields_;
    auto bad = [&](std::string_view what) {
      return fmt::format("malformed '{}' record ({}): '{}'", kind, what, sanitize(line.substr(0, 200)));
    };
    if (kind == "caller") {
      const bool with_gid = split_fields(args, 3, f);
      if (!with_gid && !split_fields(args, 2, f)) return bad("want UID USER [GID]");
      if (!to_int(f[0], scan_.caller_uid) || (with_gid && !to_int(f[2], scan_.caller_gid))) {
        return bad("want UID USER [GID]");
      }
      scan_.caller_user = std::string(f[1]);
      seen_caller_ = true;
    } else if (kind == "priv") {
      if (args != "root" && args != "user") return bad("want root or user");
      scan_.privileged = args == "root";
      seen_priv_ = true;
    } else if (kind == "devices") {
      int n = 0;
      if (!split_fields(args, 1, f) || !to_int(f[0], n)) return bad("want N");
      scan_.device_files = n;
    } else if (kind == "self") {
      if (!split_fields(args, 1, f) || !to_int(f[0], scan_.self_pid)) return bad("want PID");
    } else if (kind == "hold") {
      int pid = 0;
      if (!split_fields(args, 1, f, &rest) || !to_int(f[0], pid) || rest.empty())
        return bad("want PID DEVICE");
      holds_[pid].insert(sanitize(rest));
    } else if (kind == "lock") {
      return lock(args, bad);
    } else if (kind == "logs") {
      if (args == "0") return {};
      FileOwner owner;
      if (!split_fields(args, 3, f) || f[0] != "1" || !to_int(f[1], owner.uid))
        return bad("want 0, or 1 UID USER");
      owner.user = std::string(f[2]);
      scan_.tpu_logs = owner;
    } else if (kind == "pinfo") {
      ScannedProcess p;
      if (!split_fields(args, 7, f, &rest) || !to_int(f[0], p.pid) || !to_int(f[1], p.uid) ||
          !to_int(f[3], p.pgid) || !to_int(f[4], p.sid) || !to_int(f[5], p.ppid) ||
          !to_int(f[6], p.elapsed_s)) {
        return bad("want PID UID USER PGID SID PPID ELAPSED ARGS");
      }
      p.user = std::string(f[2]);
      p.command = sanitize(rest);
      info_[p.pid] = std::move(p);
    } else if (kind == "proc") {
      ScannedProcess p;
      if (!split_fields(args, 6, f, &rest) || !to_int(f[0], p.pid) || !to_int(f[1], p.ppid) ||
          !to_int(f[2], p.pgid) || !to_int(f[3], p.sid) || !to_int(f[4], p.uid) ||
          !to_int(f[5], p.elapsed_s)) {
        return bad("want PID PPID PGID SID UID ELAPSED ARGS");
      }
      p.command = sanitize(rest);
      scan_.processes.push_back(std::move(p));
    } else if (kind == "start") {
      int pid = 0;
      std::uint64_t ticks = 0;
      if (!split_fields(args, 2, f) || !to_int(f[0], pid) || !to_int(f[1], ticks)) return bad("want PID START");
      starts_[pid] = ticks;
    } else if (kind == "denied") {
      if (!split_fields(args, 1, f) || !to_int(f[0], scan_.denied)) return bad("want N");
      seen_denied_ = true;
    } else {
      return fmt::format("unknown record '{}'", sanitize(kind.substr(0, 40)));
    }
    return {};
  }

  // "/proc/PID/environ:<the run id variable>=VALUE", as grep -H prints it. Anything
  // else is a value's own text (newlines were made spaces) and is skipped.
  void run_id_line(std::string_view line) {
    constexpr std::string_view prefix = "/proc/";
    static const std::string key = fmt::format("/environ:{}=", worker::kRunIdVariable);
    if (line.substr(0, prefix.size()) != prefix) return;
    size_t key_at = line.find(key);
    int pid = 0;
    if (key_at == std::string_view::npos || !to_int(line.substr(prefix.size(), key_at - prefix.size()), pid))
      return;
    std::string_view value = line.substr(key_at + key.size());
    if (!value.empty()) run_ids_[pid] = sanitize(value.substr(0, 200));
  }

  template <typename Bad>
  std::string lock(std::string_view args, const Bad& bad) {
    LockfileState& lf = scan_.lockfile;
    seen_lock_ = true;
    if (args == "0") return {};
    std::vector<std::string_view>& f = fields_;
    FileOwner owner;
    if (!split_fields(args, 6, f) || f[0] != "1" || !to_int(f[1], owner.uid) || !to_int(f[3], lf.inode) ||
        (f[4] != "0" && f[4] != "1")) {
      return bad("want 0, or 1 UID USER INODE HELD PID|-");
    }
    lf.exists = true;
    owner.user = std::string(f[2]);
    lf.owner = owner;
    lf.held = f[4] == "1";
    int pid = 0;
    if (lf.held && to_int(f[5], pid) && pid > 0) lf.holder_pid = pid;
    return {};
  }

  Result<LockScan, std::string> finish() {
    if (!seen_caller_ || !seen_priv_ || !seen_lock_ || !seen_denied_) {
      return fail(0, "the scan's output lacks its caller, priv, lock or denied record");
    }
    for (auto& [pid, devices] : holds_) {
      auto info = info_.find(pid);
      if (info == info_.end()) continue;  // exited between find and ps
      ScannedProcess p = info->second;
      p.devices.assign(devices.begin(), devices.end());
      std::sort(p.devices.begin(), p.devices.end(), natural_less);
      scan_.holders.push_back(std::move(p));
    }
    if (scan_.lockfile.holder_pid && !holds_.count(*scan_.lockfile.holder_pid)) {
      auto info = info_.find(*scan_.lockfile.holder_pid);
      if (info != info_.end()) scan_.lock_holder = info->second;
    }
    auto attach = [&](ScannedProcess& p) {
      if (auto id = run_ids_.find(p.pid); id != run_ids_.end()) p.run_id = id->second;
      if (auto start = starts_.find(p.pid); start != starts_.end()) p.start_time = start->second;
    };
    for (ScannedProcess& p : scan_.holders) attach(p);
    if (scan_.lock_holder) attach(*scan_.lock_holder);
    // The process table carries uids only; name them where another record did.
    std::map<int, std::string> names{{scan_.caller_uid, scan_.caller_user}};
    for (const auto& [pid, p] : info_) names.emplace(p.uid, p.user);
    for (ScannedProcess& p : scan_.processes) {
      attach(p);
      if (auto name = names.find(p.uid); name != names.end()) p.user = name->second;
    }
    std::sort(scan_.processes.begin(), scan_.processes.end(),
              [](const ScannedProcess& a, const ScannedProcess& b) { return a.pid < b.pid; });
    return std::move(scan_);
  }

  LockScan scan_;
  std::map<int, std::set<std::string>> holds_;
  std::map<int, ScannedProcess> info_;
  std::map<int, std::string> run_ids_;
  std::map<int, std::uint64_t> starts_;
  std::vector<std::string_view> fields_;
  bool seen_caller_ = false, seen_priv_ = false, seen_lock_ = false, seen_denied_ = false;
};

}  // namespace

Result<LockScan, std::string> parse_scan(std::string_view output) { return ScanParser().parse(output); }

}  // namespace tpurun
