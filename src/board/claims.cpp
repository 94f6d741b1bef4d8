// Board: the claim files in <logs_root>/.board. Taking a claim is a link() of
// a complete temp file to <pod>.<seq>.json, the next sequence number: exactly
// one of several claimants racing for the same number succeeds (link is
// atomic, on NFS too), and readers never see a half-written claim.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <nlohmann/json.hpp>
#include <cstring>
#include <random>
#include <stdexcept>

#include "tpurun/board/claims.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/safe_dir.hpp"
#include "tpurun/util/unique_fd.hpp"

namespace tpurun {
namespace {

constexpr const char* kBoard = ".board";

std::optional<uid_t> passwd_uid(const std::string& user) {
  passwd pw{};
  passwd* found = nullptr;
  char buffer[4096];
  if (::getpwnam_r(user.c_str(), &pw, buffer, sizeof buffer, &found) == 0 && found != nullptr) return found->pw_uid;
  return std::nullopt;
}

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error(fmt::format("cannot {} {}: {}", what, path, std::strerror(err)));
}

// <logs_root>/.board, checked: a real directory that others may write only
// with the sticky bit. Created 1777 when `create` and missing; an empty fd
// when missing and not `create`.
UniqueFd open_board(const std::string& logs_root, bool create) {
  auto root = open_shared_root(logs_root);
  if (!root) {
    if (!create && root.error().kind == DirProblem::Kind::missing) return {};
    throw std::runtime_error(root.error().message());
  }
  const std::string path = logs_root + "/" + kBoard;
  // Claims are taken from other hosts: on NFS this client may still cache
  // "no .board" (or an old one) for a minute. Opening logs_root (the fd above
  // is O_PATH, which NFS does not revalidate) is its close-to-open check: a
  // changed directory drops its cached lookups, found or not.
  UniqueFd revalidated(::openat(root->fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd fd(::openat(root->fd.get(), kBoard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd && errno == ENOENT) {
    if (!create) return {};
    if (::mkdirat(root->fd.get(), kBoard, 01777) != 0 && errno != EEXIST) fail("create", path, errno);
    fd.reset(::openat(root->fd.get(), kBoard, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (fd && ::fstat(fd.get(), &st) == 0 && st.st_uid == ::geteuid()) ::fchmod(fd.get(), 01777);  // past the umask
  }
  if (!fd) fail(errno == ELOOP || errno == ENOTDIR ? "use (not a real directory)" : "open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("stat", path, errno);
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    throw std::runtime_error(fmt::format("{} is writable by everyone without the sticky bit, so anyone could "
                                         "remove others' claims; fix: chmod 1777 {}",
                                         path, path));
  }
  return fd;
}

// "<pod>.<seq>.json" -> pod, seq.
bool parse_name(const std::string& name, std::string& pod, long long& seq) {
  const std::string suffix = ".json";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  std::string stem = name.substr(0, name.size() - suffix.size());
  size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == stem.size()) return false;
  std::string digits = stem.substr(dot + 1);
  if (digits.size() > 15 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return false;
  pod = stem.substr(0, dot);
  seq = std::stoll(digits);
  return pod[0] != '.';
}

std::vector<std::string> list_names(int fd) {
  std::vector<std::string> names;
  DIR* dir = ::fdopendir(::dup(fd));
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) names.push_back(entry->d_name);
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// A complete file that only the caller can write, under a unique temp name.
std::string write_temp(int board_fd, const std::string& board_path, const std::string& text) {
  std::random_device device;
  std::string name = fmt::format(".tmp-{}-{:x}", ::getpid(), device());
  UniqueFd fd(::openat(board_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) fail("create a claim in", board_path, errno);
  ::fchmod(fd.get(), 0644);
  bool ok = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd.get()) == 0;
  int err = errno;
  if (::close(fd.release()) != 0) ok = false;
  if (!ok) {
    ::unlinkat(board_fd, name.c_str(), 0);
    fail("write a claim in", board_path, err ? err : EIO);
  }
  return name;
}

void rewrite(int board_fd, const std::string& board_path, const Claim& claim) {
  std::string temp = write_temp(board_fd, board_path, claim_to_json(claim));
  std::string name = fmt::format("{}.{}.json", claim.pod, claim.seq);
  if (::renameat(board_fd, temp.c_str(), board_fd, name.c_str()) != 0) {
    int err = errno;
    ::unlinkat(board_fd, temp.c_str(), 0);
    fail("update", claim.file, err);
  }
}

}  // namespace

Board::Board(std::string logs_root, std::function<std::optional<uid_t>(const std::string&)> uid_of)
    : logs_root_(std::move(logs_root)), uid_of_(uid_of ? std::move(uid_of) : passwd_uid) {}

BoardScan Board::scan(const std::string& only_pod) const {
  BoardScan scan;
  UniqueFd board = open_board(logs_root_, false);
  if (!board) return scan;
  for (const std::string& name : list_names(board.get())) {
    std::string pod;
    long long seq = 0;
    if (!parse_name(name, pod, seq)) continue;
    if (!only_pod.empty() && pod != only_pod) continue;
    scan.max_seq[pod] = std::max(scan.max_seq[pod], seq);
    const std::string path = dir() + "/" + name;
    UniqueFd fd(::openat(board.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 65536) {
      scan.warnings.push_back(fmt::format("ignoring claim file {}: not a small regular file", path));
      continue;
    }
    std::string text(static_cast<size_t>(st.st_size), '\0');
    if (::read(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      scan.warnings.push_back(fmt::format("ignoring claim file {}: cannot read it", path));
      continue;
    }
    Claim claim;
    try {
      claim = claim_from_json(text);
    } catch (const std::exception& e) {
      scan.warnings.push_back(fmt::format("ignoring corrupt claim file {}: {}", path, e.what()));
      continue;
    }
    claim.file = path;
    if (claim.pod != pod || claim.seq != seq) {
      scan.warnings.push_back(fmt::format("ignoring claim file {}: it names pod '{}' #{}", path, claim.pod, claim.seq));
      continue;
    }
    auto uid = uid_of_(claim.user);
    if (!uid || *uid != st.st_uid || (st.st_mode & (S_IWGRP | S_IWOTH))) {
      // A claim counts only when its owner is the user it names. Where users
      // have other uids on other VMs (no OS Login), that cannot be checked,
      // so it does not count either: docs/board.md.
      std::string why = (st.st_mode & (S_IWGRP | S_IWOTH)) ? " and others can write it" : "";
      if (!why.empty() || !uid) {
        why += uid ? "" : fmt::format("; there is no user '{}' here", claim.user);
      } else {
        why += fmt::format(" while '{}' is uid {} here: forged, or the same user with other uids on different VMs "
                           "(give users one uid everywhere, e.g. OS Login; docs/board.md)",
                           claim.user, *uid);
      }
      scan.warnings.push_back(fmt::format("ignoring claim file {}: it names user '{}' but is owned by uid {}{}", path,
                                          claim.user, st.st_uid, why));
      continue;
    }
    scan.claims.push_back(std::move(claim));
  }
  return scan;
}

std::optional<Claim> Board::holder(const std::string& pod, WallClock::time_point now,
                                   std::vector<std::string>* warnings) const {
  BoardScan s = scan(pod);
  if (warnings) warnings->insert(warnings->end(), s.warnings.begin(), s.warnings.end());
  std::optional<Claim> found;
  for (const Claim& c : s.claims) {
    if (c.live(now) && (!found || c.seq > found->seq)) found = c;
  }
  return found;
}

ClaimOutcome Board::claim(const std::string& pod, const std::string& user, std::chrono::seconds duration,
                          const std::string& note, const std::string& host, WallClock::time_point now,
                          bool extend) const {
  if (!is_plain_name(pod)) throw std::runtime_error(fmt::format("invalid pod name '{}'", pod));
  UniqueFd board = open_board(logs_root_, true);
  const auto expires = std::chrono::time_point_cast<std::chrono::seconds>(now + duration);
  for (int attempt = 0; attempt < 20; ++attempt) {
    ClaimOutcome out;
    BoardScan s = scan(pod);
    out.warnings = s.warnings;
    std::optional<Claim> held;
    for (const Claim& c : s.claims) {
      if (c.live(now) && (!held || c.seq > held->seq)) held = c;
    }
    if (held && (held->user != user || !extend)) {
      out.claim = *held;
      return out;
    }
    if (held) {  // --extend of our own claim
      held->expires_at = expires;
      if (!note.empty()) held->note = note;
      rewrite(board.get(), dir(), *held);
      out.ok = true;
      out.claim = *held;
      return out;
    }
    Claim c;
    c.pod = pod;
    c.seq = s.max_seq[pod] + 1;
    c.user = user;
    c.host = host;
    c.note = note;
    c.created_at = std::chrono::time_point_cast<std::chrono::seconds>(now);
    c.expires_at = expires;
    const std::string name = fmt::format("{}.{}.json", pod, c.seq);
    c.file = dir() + "/" + name;
    std::string temp = write_temp(board.get(), dir(), claim_to_json(c));
    int rc = ::linkat(board.get(), temp.c_str(), board.get(), name.c_str(), 0);
    int err = errno;
    struct stat st {};
    // NFS may answer a retransmitted, successful link with EEXIST: the link count tells.
    bool won = rc == 0 || (err == EEXIST && ::fstatat(board.get(), temp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                           st.st_nlink == 2);
    ::unlinkat(board.get(), temp.c_str(), 0);
    if (!won && err != EEXIST) fail("take a claim in", dir(), err);
    if (!won) continue;  // someone took this number first: look again
    for (const Claim& old : s.claims) {  // our own spent claims on this pod are clutter now
      if (old.user == user && !old.live(now)) ::unlinkat(board.get(), fmt::format("{}.{}.json", pod, old.seq).c_str(), 0);
    }
    out.ok = true;
    out.claim = c;
    return out;
  }
  throw std::runtime_error(fmt::format("could not take a claim on '{}': too many concurrent claims", pod));
}

void Board::mark_idle(const std::string& run_id, const std::string& user, WallClock::time_point since) const {
  if (!is_plain_name(run_id)) throw std::runtime_error(fmt::format("invalid run id '{}'", run_id));
  UniqueFd board = open_board(logs_root_, true);
  const nlohmann::json mark{{"run_id", run_id}, {"user", user}, {"idle_since", format_utc_time(since)}};
  std::string temp = write_temp(board.get(), dir(), mark.dump() + "\n");
  const std::string name = "idle-" + run_id;
  if (::renameat(board.get(), temp.c_str(), board.get(), name.c_str()) != 0) {
    int err = errno;
    ::unlinkat(board.get(), temp.c_str(), 0);
    fail("write", dir() + "/" + name, err);
  }
}

void Board::clear_idle(const std::string& run_id) const {
  if (!is_plain_name(run_id)) return;
  UniqueFd board = open_board(logs_root_, false);
  if (board) ::unlinkat(board.get(), ("idle-" + run_id).c_str(), 0);
}

std::optional<WallClock::time_point> Board::idle_since(const std::string& run_id, const std::string& user) const {
  if (!is_plain_name(run_id)) return std::nullopt;
  UniqueFd board = open_board(logs_root_, false);
  if (!board) return std::nullopt;
  UniqueFd fd(::openat(board.get(), ("idle-" + run_id).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 4096) return std::nullopt;
  auto uid = uid_of_(user);
  if (!uid || *uid != st.st_uid || (st.st_mode & (S_IWGRP | S_IWOTH))) return std::nullopt;  // as for claims
  std::string text(static_cast<size_t>(st.st_size), '\0');
  if (::read(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) return std::nullopt;
  try {
    const auto mark = nlohmann::json::parse(text);
    if (mark.value("run_id", "") != run_id || mark.value("user", "") != user) return std::nullopt;
    return parse_utc_time(mark.value("idle_since", ""));
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::optional<Claim> Board::release(const std::string& pod, const std::string& user, WallClock::time_point now) const {
  std::optional<Claim> held = holder(pod, now);
  if (!held || held->user != user) return std::nullopt;
  UniqueFd board = open_board(logs_root_, true);
  held->released_at = std::chrono::time_point_cast<std::chrono::seconds>(now);
  rewrite(board.get(), dir(), *held);
  return held;
}

}  // namespace tpurun
