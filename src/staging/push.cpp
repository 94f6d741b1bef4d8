#include "tpurun/staging/push.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <fmt/format.h>
#include <sstream>

#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/unique_fd.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kAnswerWait{120};  // ample for stat-ing or linking 10k files there

std::string trim(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  size_t start = 0;
  while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start]))) ++start;
  return text.substr(start);
}

// What the worker said, for a message: "<kPushError> why" -> "why".
std::string answer_text(const std::string& line) {
  const std::string error = std::string(worker::kPushError) + " ";
  return trim(line.starts_with(error) ? line.substr(error.size()) : line);
}

// Reads whole lines from the worker; the answer lines are short.
class LineReader {
 public:
  LineReader(ExecStream& stream, const CancelToken& cancel) : stream_(stream), cancel_(cancel) {}
  // A worker that stops answering (frozen, its link gone quiet) ends the
  // wait after kAnswerWait: the stage then names it, and nothing starts.
  Result<std::string, std::string> line() {
    const auto deadline = Clock::now() + kAnswerWait;
    for (;;) {
      // Lines are taken from `start_` on (the missing list is 10k lines at
      // 10k files: erasing each from the front would move the rest each time).
      if (const size_t nl = buffer_.find('\n', start_); nl != std::string::npos) {
        std::string line = buffer_.substr(start_, nl - start_);
        start_ = nl + 1;
        return line;
      }
      buffer_.erase(0, start_);
      start_ = 0;
      if (cancel_.cancelled()) return unexpected(interrupted_by());
      if (Clock::now() > deadline) {
        return unexpected(fmt::format("the worker did not answer for {} s", kAnswerWait.count()));
      }
      auto got = stream_.read(200);
      if (!got) return unexpected(got.error().message);
      if (got->eof) {
        const std::string err = trim(stream_.err());
        return unexpected(err.empty() ? std::string("the worker's side ended without an answer")
                                      : "the worker's side failed: " + last_line_of(err));
      }
      buffer_ += got->data;
    }
  }

 private:
  static std::string last_line_of(const std::string& text) {
    const size_t nl = text.rfind('\n');
    return nl == std::string::npos ? text : text.substr(nl + 1);
  }
  ExecStream& stream_;
  const CancelToken& cancel_;
  std::function<void()> idle_;
  std::string buffer_;
  size_t start_ = 0;
};

// "<kPushHave> DIR[\0LOGDIR]": the paths, a NUL between them (a project's
// dir name, and so its log dir, may hold spaces).
bool parse_have(const std::string& line, PushResult& result) {
  const std::string head = std::string(worker::kPushHave) + " ";
  if (!line.starts_with(head)) return false;
  const std::string rest = line.substr(head.size());
  const size_t nul = rest.find('\0');
  result.staged_dir = rest.substr(0, nul);
  result.log_dir = nul == std::string::npos ? "" : rest.substr(nul + 1);
  return !result.staged_dir.empty();
}

// "<head> A B": the two numbers of a worker's answer.
bool answer_is(const std::string& line, const char* head, unsigned long long& a, unsigned long long& b) {
  const std::string prefix = std::string(head) + " ";
  return line.starts_with(prefix) && std::sscanf(line.c_str() + prefix.size(), "%llu %llu", &a, &b) == 2;
}

std::string manifest_of(const StagedSnapshot& snapshot) {
  std::string text;
  for (const SnapshotEntry& e : snapshot.entries) {
    text += fmt::format("{} {} {} {} {} {}\n", e.symlink ? 'l' : 'f', e.executable ? 1 : 0, e.size,
                        e.symlink ? "-" : e.object, e.path.size(), e.link_target.size());
    text += e.path;
    text += e.link_target;
  }
  return fmt::format("{} {} {}\n", worker::kPushManifest, snapshot.entries.size(), text.size()) + text;
}

// Writes to the worker in large pieces: a small file's header and bytes
// would otherwise each be an SSH packet, and a read and write on the
// worker's side. 64 KiB: libssh keeps a copy of each write, and another
// encrypted, so at 32 workers 256 KiB pieces cost 30 MiB more of the client's
// memory (64 -> 34 MiB peak, 32 workers x 2,000 files) for no speed that the
// bench could tell apart.
class SendBuffer {
 public:
  explicit SendBuffer(ExecStream& stream) : stream_(stream) { buffer_.reserve(kSize); }
  std::optional<TransportError> add(std::string_view data) {
    buffer_ += data;
    return buffer_.size() >= kSize ? flush() : std::nullopt;
  }
  // Room for `n` more bytes read straight into the buffer (then `added`).
  char* room(size_t n) {
    used_ = buffer_.size();
    buffer_.resize(used_ + n);
    return buffer_.data() + used_;
  }
  std::optional<TransportError> added(size_t n) {
    buffer_.resize(used_ + n);
    return buffer_.size() >= kSize ? flush() : std::nullopt;
  }
  std::optional<TransportError> flush() {
    if (buffer_.empty()) return std::nullopt;
    auto error = stream_.write(buffer_);
    buffer_.clear();
    return error;
  }
  static constexpr size_t kSize = 64 * 1024;

 private:
  ExecStream& stream_;
  std::string buffer_;
  size_t used_ = 0;
};

// Sends one object's bytes, read from the snapshot's own file on this host.
Result<std::uint64_t, std::string> send_object(SendBuffer& out, const StagedSnapshot& snapshot,
                                                const SnapshotEntry& entry, const CancelToken& cancel) {
  const std::string path = snapshot.dir + "/" + entry.path;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return unexpected(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  if (auto error = out.add(fmt::format("{} {}\n", entry.object, entry.size))) return unexpected(error->message);
  std::uint64_t left = entry.size;
  while (left > 0) {
    if (cancel.cancelled()) return unexpected(interrupted_by());
    const size_t want = static_cast<size_t>(std::min<std::uint64_t>(left, SendBuffer::kSize));
    const ssize_t n = ::read(fd.get(), out.room(want), want);
    if (n <= 0) {
      out.added(0);
      return unexpected(fmt::format("{} changed while it was sent (the snapshot is read-only)", path));
    }
    if (auto error = out.added(static_cast<size_t>(n))) return unexpected(error->message);
    left -= static_cast<std::uint64_t>(n);
  }
  return entry.size;
}

}  // namespace

std::string remote_path_word(const std::string& path) {
  if (path == "~") return "\"$HOME\"";
  if (path.starts_with("~/")) return "\"$HOME\"/" + shell_quote(path.substr(2));
  return shell_quote(path);
}

std::string have_command(const StagedSnapshot& snapshot, const PushTarget& target) {
  std::string args = "set -- " + remote_path_word(target.staging_root) + " " + remote_path_word(target.logs_root) +
                     " " + shell_join({target.user, snapshot.name, snapshot.tree_hash});
  if (!target.run_id.empty()) args += " " + shell_join({target.project, target.run_id});
  return args + "\n" + std::string(worker::kPushHaveSh);
}

std::optional<PushResult> parse_have_answer(const std::string& out) {
  PushResult result;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (parse_have(line, result)) {
      result.had = true;
      return result;
    }
  }
  return std::nullopt;
}

PushContent::PushContent(const StagedSnapshot& s) : snapshot(s), manifest(manifest_of(s)) {
  by_object.reserve(s.entries.size());
  for (const SnapshotEntry& e : s.entries) {
    if (!e.symlink) by_object.emplace(e.object, &e);
  }
}

Result<PushResult, std::string> push_snapshot(Connection& connection, const StagedSnapshot& snapshot,
                                              const PushTarget& target, const CancelToken& cancel,
                                              const std::function<void()>& keepalive) {
  return push_snapshot(connection, PushContent(snapshot), target, cancel, keepalive);
}

Result<PushResult, std::string> push_snapshot(Connection& connection, const PushContent& content,
                                              const PushTarget& target, const CancelToken& cancel,
                                              const std::function<void()>& keepalive) {
  const StagedSnapshot& snapshot = content.snapshot;
  std::vector<std::string> words = {remote_path_word(target.staging_root), remote_path_word(target.logs_root),
                                    shell_join({target.user, snapshot.name, snapshot.tree_hash})};
  if (!target.run_id.empty()) words.push_back(shell_join({target.project, target.run_id}));
  const RemoteCommand command = python3_command(worker::kPushPy, words);
  auto opened = connection.open_exec(command.command_line, cancel);
  if (!opened) return unexpected(opened.error().message);
  ExecStream& stream = **opened;
  // A worker that stops taking what is sent (its push stopped, its disk
  // slow) keeps its reservation all the same, and Ctrl-C still works: the
  // keepalive goes while the write waits, not only between files.
  auto last_keepalive = Clock::now();
  auto keep_alive = [&] {
    if (keepalive && Clock::now() - last_keepalive > std::chrono::seconds(20)) {
      keepalive();
      last_keepalive = Clock::now();
    }
  };
  stream.while_waiting([&] {
    keep_alive();
    return !cancel.cancelled();
  });
  if (auto error = stream.write(command.stdin_data)) return unexpected(error->message);
  LineReader reader(stream, cancel);
  PushResult result;
  // A new snapshot (a new name) is on no worker yet: its manifest goes at
  // once, without waiting for "need" (one round trip less).
  const bool eager = !snapshot.reused;
  if (eager) {
    if (auto error = stream.write(content.manifest)) return unexpected(error->message);
  }
  auto first = reader.line();
  if (!first) return unexpected(first.error());
  if (parse_have(*first, result)) {
    result.had = true;
    return result;
  }
  if (*first != worker::kPushNeed) return unexpected(answer_text(*first));
  const auto started = Clock::now();
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
  };
  if (!eager) {
    if (auto error = stream.write(content.manifest)) return unexpected(error->message);
  }
  auto answer = reader.line();
  if (!answer) return unexpected(answer.error());
  unsigned long long count = 0, need = 0, free = 0;
  if (answer_is(*answer, worker::kPushNospace, need, free)) {
    return unexpected(fmt::format("no room for the snapshot under {}: {} needed (its files' disk blocks, and 1 MiB "
                                  "for the run's first logs), {} free (tpurun gc, or free space "
                                  "on the worker's disk)", target.staging_root, human_size(need), human_size(free)));
  }
  if (!answer_is(*answer, worker::kPushMissing, count, need)) {
    return unexpected(answer_text(*answer));
  }
  const auto asked = Clock::now();
  SendBuffer out(stream);
  for (unsigned long long i = 0; i < count; ++i) {
    auto object = reader.line();
    if (!object) return unexpected(object.error());
    auto it = content.by_object.find(*object);
    if (it == content.by_object.end()) return unexpected(std::string("the worker asked for an object the snapshot does not have"));
    auto sent = send_object(out, snapshot, *it->second, cancel);
    if (!sent) return unexpected(sent.error());
    result.bytes_sent += *sent;
    result.objects_sent += 1;
    keep_alive();
  }
  if (auto error = out.add(std::string(worker::kPushEnd) + "\n")) return unexpected(error->message);
  if (auto error = out.flush()) return unexpected(error->message);
  const auto sent_all = Clock::now();
  auto built = reader.line();
  if (!built) return unexpected(built.error());
  if (!parse_have(*built, result)) {
    return unexpected(answer_text(*built));
  }
  result.manifest_ms = ms_since(started) - ms_since(asked);
  result.send_ms = ms_since(asked) - ms_since(sent_all);
  result.build_ms = ms_since(sent_all);
  return result;
}

}  // namespace tpurun
