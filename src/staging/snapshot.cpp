// create_snapshot: list, check the size, fill a hidden temp dir from the
// object store, make it read-only, and rename it into place.
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <climits>
#include <cstdlib>
#include <optional>

#include "staging/adoption.hpp"
#include "staging/file_list.hpp"
#include "staging/file_placer.hpp"
#include "staging/fs_util.hpp"
#include "staging/git_info.hpp"
#include "staging/object_store.hpp"
#include "staging/size_guard.hpp"
#include "staging/snapshot_build.hpp"
#include "staging/snapshot_name.hpp"
#include "staging/stat_cache.hpp"
#include "tpurun/staging/adopt_pending.hpp"
#include "tpurun/staging/snapshot.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/safe_dir.hpp"

namespace tpurun {
namespace {

using namespace staging;

constexpr int kNameAttempts = 20;
// Files changed this recently are not trusted to the stat cache (see put()).
constexpr std::int64_t kRacyWindowNs = 2'000'000'000;

// Removes the hidden temp dir unless the snapshot made it into place.
class TempDirGuard {
 public:
  TempDirGuard(int parent_fd, std::string name) : parent_fd_(parent_fd), name_(std::move(name)) {}
  ~TempDirGuard() {
    if (!name_.empty()) remove_tree_at(parent_fd_, name_);
  }
  void release() { name_.clear(); }

 private:
  int parent_fd_;
  std::string name_;
};

std::optional<StageError> check_user(const std::string& user) {
  if (user.empty() || user == "." || user == ".." || user.find('/') != std::string::npos) {
    return StageError{"invalid user name for the staging directory: '" + user + "'"};
  }
  return std::nullopt;
}

// <staging_root>/<user>, created private (kPrivateDirMode, narrowed by the
// umask) and checked to be the caller's own: another user's directory there
// (made before our first stage) is refused, with the command that fixes it.
Result<SafeDir, StageError> open_user_dir(const SnapshotRequest& request) {
  auto user = open_own_path(request.staging_root, {request.user}, Create::if_missing);
  if (!user) {
    const DirProblem& p = user.error();
    if (p.parent && !p.unsafe())
      return unexpected(StageError{"cannot open the staging root " + request.staging_root + ": " +
                                   errno_text(p.err) + " (is the shared file system mounted?)"});
    return unexpected(StageError{p.message()});
  }
  return std::move(*user);
}

std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string canonical(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

// rename(2) that never replaces: renameat2(RENAME_NOREPLACE), or where that
// is not supported (older NFS), a check for the name first.
int rename_no_replace(int dir_fd, const std::string& from, const std::string& to) {
  if (::renameat2(dir_fd, from.c_str(), dir_fd, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return errno;
  struct stat st {};
  if (::fstatat(dir_fd, to.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return EEXIST;
  return ::renameat(dir_fd, from.c_str(), dir_fd, to.c_str()) == 0 ? 0 : errno;
}

std::string escape_glob(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The warning of a stage of a home directory, naming what it left out there.
std::string home_dir_note(int source_fd) {
  std::string present;
  for (std::string name : home_secret_names()) {
    if (name.find('*') != std::string::npos) continue;
    if (name.ends_with('/')) name.pop_back();
    struct stat st {};
    if (::fstatat(source_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) present += (present.empty() ? "" : ", ") + name;
  }
  return "this is your home directory, not a project: its keys and credentials stay here (left out: " +
         (present.empty() ? std::string("none present") : present) +
         ", and shell histories; docs/runs.md). Stage a project's directory instead";
}

struct Listing {
  GitInfo git;
  SourceListing source;
};

Result<Listing, StageError> list_project(const SnapshotRequest& request, int source_fd,
                                         ProcessRunner& processes, const CancelToken& cancel) {
  auto git = read_git_info(request.source_dir, processes);
  if (!git) return unexpected(git.error());
  IgnoreRules rules = load_ignore_rules(source_fd);
  // A staging root inside the project must not be staged into itself.
  std::string project = canonical(request.source_dir), root = canonical(request.staging_root);
  std::optional<std::string> inner_root;
  if (root.size() > project.size() && root.starts_with(project + "/")) {
    inner_root = root.substr(project.size() + 1);
    rules.add_pattern("/" + escape_glob(*inner_root) + "/");
  }
  // A home directory is not a project: its secrets stay home, whatever a
  // .tpurunignore says (these rules come last, so they win).
  const bool home = !request.home_dir.empty() && canonical(request.home_dir) == project;
  if (home) rules.append(IgnoreRules::home_secrets());
  auto source = git->is_repo
                    ? list_git_files(request.source_dir, source_fd, rules, processes, cancel)
                    : walk_files(source_fd, rules, cancel);
  if (!source) return unexpected(source.error());
  if (inner_root) source->notes.push_back("left out " + *inner_root + ": it is the staging root");
  if (home) source->notes.push_back(home_dir_note(source_fd));
  if (source->files.empty()) {
    return unexpected(StageError{
        "nothing to stage in " + request.source_dir +
        (git->is_repo ? " (git lists no files there: is it ignored by an enclosing repository?)"
                      : " (the directory is empty, or everything in it is ignored)")});
  }
  git->dirty = git->dirty || source->untracked > 0;
  return Listing{std::move(*git), std::move(*source)};
}

// Where the workers find a snapshot: the staging root as configured, not as
// this host resolves it (the dev VM may reach the share through a symlink or
// another mount point than the workers).
std::string snapshot_path(const SnapshotRequest& request, const std::string& name) {
  std::string root = std::filesystem::path(request.staging_root).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root + "/" + request.user + "/" + name;
}

// An index of the user's snapshots by tree hash: ".tree-<hash>", a symlink
// whose text is the snapshot's name (never followed; the name is checked).
std::string tree_link(const std::string& hash) { return ".tree-" + hash; }

void remember_tree(int user_fd, const std::string& hash, const std::string& name) {
  const std::string temp = tree_link(hash) + ".tmp-" + std::to_string(::getpid());
  ::unlinkat(user_fd, temp.c_str(), 0);
  if (::symlinkat(name.c_str(), user_fd, temp.c_str()) != 0) return;  // only an index: staging still worked
  if (::renameat(user_fd, temp.c_str(), user_fd, tree_link(hash).c_str()) != 0) ::unlinkat(user_fd, temp.c_str(), 0);
}

// Unchanged code: every file's content is known from the stat cache, and
// their tree is a snapshot the user already has. On NFS a snapshot costs a
// create or a link per file, each a round trip; this costs three. The
// snapshot is read-only, so a job of the new run sees exactly what it would
// have in a new one; its time is touched so that gc counts this use.
std::optional<StagedSnapshot> reuse_unchanged(const SnapshotRequest& request, const SafeDir& user_dir,
                                              const std::vector<SourceFile>& files,
                                              const std::vector<std::optional<ContentHash>>& known,
                                              const std::string& sha) {
  std::vector<ContentHash> hashes(files.size());
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].symlink) continue;
    if (!known[i]) return std::nullopt;
    hashes[i] = *known[i];
    bytes += files[i].stamp.size;
  }
  const std::string hash = tree_hash(files, hashes).hex();
  char target[256] = {};
  const ssize_t n = ::readlinkat(user_dir.fd.get(), tree_link(hash).c_str(), target, sizeof target - 1);
  if (n <= 0) return std::nullopt;
  const std::string name(target, static_cast<std::size_t>(n));
  // Only a snapshot made at the same commit: its name says the sha.
  if (!is_snapshot_name(name) || !name.ends_with("-" + sha + "-code")) return std::nullopt;
  auto dir = open_own_dir(user_dir, name, Create::never);
  if (!dir) return std::nullopt;  // gone (gc) or not the user's own: stage afresh
  ::futimens(dir->fd.get(), nullptr);
  StagedSnapshot staged;
  staged.dir = snapshot_path(request, name);
  staged.name = name;
  staged.tree_hash = hash;
  staged.files = files.size();
  staged.bytes = bytes;
  staged.bytes_reused = bytes;
  staged.reused = true;
  staged.entries = entries_of(files, hashes);
  return staged;
}

// The files copied in but left out of the store, for adopt_pending.
void note_pending(const SnapshotRequest& request, const std::string& name, const std::vector<SourceFile>& files,
                  const FilledTree& filled, StagedSnapshot& staged) {
  PendingList list{request.staging_root, request.user, name, {}};
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (filled.pending[i]) list.files.push_back(PendingFile{files[i].path, filled.hashes[i], files[i].executable});
  }
  if (list.files.empty()) return;
  std::string error = write_pending_list(request.adopt_dir, list);
  if (error.empty()) {
    staged.adoption_pending = true;
  } else {
    staged.notes.push_back(error + ": the new files stay out of the object store (the next stage copies them again)");
  }
}

// The files that changed while they were read, as the stage's notes (a few
// by name): each is staged as read, the same bytes on every worker.
void note_changed(const std::vector<SourceFile>& files, const FilledTree& filled, std::vector<std::string>& notes) {
  constexpr std::size_t kNamed = 3;
  std::vector<std::string> named;
  std::size_t count = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!filled.changed[i]) continue;
    if (++count <= kNamed) named.push_back(fmt::format("{} ({} staged)", files[i].path, human_size(filled.sizes[i])));
  }
  if (count == 0) return;
  notes.push_back(fmt::format("{} changed while it was read, and is staged as read: {}{}",
                              count == 1 ? "1 file" : fmt::format("{} files", count), fmt::join(named, ", "),
                              count > kNamed ? fmt::format(" and {} more", count - kNamed) : ""));
}

Result<StagedSnapshot, StageError> build_snapshot(
    const SnapshotRequest& request, ProcessRunner& processes, const CancelToken& cancel,
    const std::function<void(const SnapshotProgress&)>& progress) {
  if (auto bad = check_user(request.user)) return unexpected(*bad);
  std::int64_t started_ns = realtime_ns();
  UniqueFd source_fd(::open(request.source_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!source_fd) {
    return unexpected(StageError{"cannot open the project directory " + request.source_dir + ": " +
                                 errno_text(errno)});
  }
  auto listing = list_project(request, source_fd.get(), processes, cancel);
  if (!listing) return unexpected(listing.error());
  const std::vector<SourceFile>& files = listing->source.files;
  if (auto too_big = check_size_limit(files, request.size_limit)) return unexpected(*too_big);
  if (cancel.cancelled()) return unexpected(cancelled_error());

  auto user_fd = open_user_dir(request);
  if (!user_fd) return unexpected(user_fd.error());
  auto store = ObjectStore::open(*user_fd);
  if (!store) return unexpected(StageError{store.error()});
  StatCache cache = StatCache::load(request.stat_cache_dir, canonical(request.source_dir));
  cache.set_racy_after(started_ns - kRacyWindowNs);
  auto known = cache.known_hashes(files);
  const std::string sha = short_sha(listing->git);
  if (auto reused = reuse_unchanged(request, *user_fd, files, known, sha)) {
    reused->git = std::move(listing->git);
    reused->notes = std::move(listing->source.notes);
    return std::move(*reused);
  }

  auto now = request.now == std::chrono::system_clock::time_point{}
                 ? std::chrono::system_clock::now()
                 : request.now;
  auto suffix = [&] { return request.random_suffix ? request.random_suffix() : random_suffix(); };
  std::string name = snapshot_name(now, suffix(), sha);
  std::string temp;
  Result<SafeDir, DirProblem> tree = unexpected(DirProblem{});
  for (int attempt = 0;; ++attempt) {
    temp = fmt::format(".tmp-{}-{}", name, ::getpid());
    tree = open_own_dir(*user_fd, temp, Create::exclusive);
    if (tree) break;
    if (tree.error().err != EEXIST || attempt == kNameAttempts)
      return unexpected(StageError{tree.error().message()});
    name = snapshot_name(now, suffix(), sha);  // another thread of ours builds this name
  }
  TempDirGuard guard(user_fd->fd.get(), temp);
  const int tree_fd = tree->fd.get();

  const bool defer_store = !request.adopt_dir.empty();
  // What earlier stages left out of the store goes in first, so that this one
  // links it rather than copying it again.
  AdoptReport earlier;
  if (defer_store) earlier = adopt_pending(request.adopt_dir, AdoptBusy::wait, cancel);
  constexpr unsigned kDefaultThreads = 8;  // see SnapshotRequest::threads
  unsigned threads = request.threads != 0 ? request.threads : kDefaultThreads;
  auto filled = fill_tree(TreeInput{files, source_fd.get(), tree_fd, *store, known, cancel, progress, threads,
                                    defer_store});
  if (!filled) return unexpected(filled.error());
  if (int err = make_read_only(tree_fd, files); err != 0)
    return unexpected(write_error(temp, err));
  if (cancel.cancelled()) return unexpected(cancelled_error());
  if (request.publish_gate && !request.publish_gate())
    return unexpected(StageError{"the snapshot was not published: the stage stopped before launch"});

  for (int attempt = 0;; ++attempt) {
    int err = rename_no_replace(user_fd->fd.get(), temp, name);
    if (err == 0) break;
    if ((err != EEXIST && err != ENOTEMPTY) || attempt == kNameAttempts) {
      return unexpected(
          StageError{"cannot rename the snapshot into place as " + name + ": " + errno_text(err)});
    }
    name = snapshot_name(now, suffix(), sha);
  }
  guard.release();

  StagedSnapshot staged;
  staged.dir = snapshot_path(request, name);
  staged.name = name;
  staged.git = std::move(listing->git);
  staged.tree_hash = tree_hash(files, filled->hashes).hex();
  remember_tree(user_fd->fd.get(), staged.tree_hash, name);
  staged.files = files.size();
  staged.bytes = filled->bytes;
  staged.bytes_reused = filled->bytes_reused;
  staged.files_read = filled->files_read;
  staged.entries = entries_of(files, filled->hashes, &filled->sizes);
  staged.notes = std::move(listing->source.notes);
  note_changed(files, *filled, staged.notes);
  for (const std::string& error : earlier.errors) staged.notes.push_back("object store: " + error);
  if (defer_store) note_pending(request, name, files, *filled, staged);
  for (std::size_t i = 0; i < files.size(); ++i) {  // a file that changed is read again next time
    if (!files[i].symlink && !filled->changed[i]) cache.put(files[i].path, files[i].stamp, filled->hashes[i]);
  }
  if (std::string error = cache.save(); !error.empty()) staged.notes.push_back(error);
  return staged;
}

}  // namespace

Result<StagedSnapshot, StageError> create_snapshot(
    const SnapshotRequest& request, ProcessRunner& processes, const CancelToken& cancel,
    const std::function<void(const SnapshotProgress&)>& progress) {
  try {
    return build_snapshot(request, processes, cancel, progress);
  } catch (const std::exception& e) {  // the temp dir is gone already (TempDirGuard)
    return unexpected(StageError{std::string("staging failed: ") + e.what()});
  }
}

}  // namespace tpurun
