#include "staging/git_info.hpp"

#include <string_view>

namespace tpurun::staging {
namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Parses `git status --porcelain=v2 --branch -z` records.
void parse_status(const std::string& out, GitInfo& git) {
  std::string_view rest(out);
  while (!rest.empty()) {
    size_t end = rest.find('\0');
    std::string_view record = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    if (record.starts_with("# branch.oid ")) {
      std::string_view oid = record.substr(13);
      if (oid != "(initial)") git.sha = std::string(oid);
    } else if (record.starts_with("# branch.head ")) {
      std::string_view head = record.substr(14);
      if (head != "(detached)") git.branch = std::string(head);
    } else if (!record.empty() && record[0] != '#') {
      git.dirty = true;  // a changed, renamed or unmerged entry
    }
  }
}

}  // namespace

Result<GitInfo, StageError> read_git_info(const std::string& source_dir, ProcessRunner& processes) {
  GitInfo git;
  ProcessResult status =
      processes.run({"git", "-C", source_dir, "--no-optional-locks", "status", "--porcelain=v2",
                     "--branch", "-z", "--untracked-files=no"});
  if (status.exit_code == 127) return git;  // no git: the caller walks the tree
  if (status.exit_code != 0) {
    if (status.err.find("not a git repository") != std::string::npos) return git;
    return unexpected(
        StageError{"git status failed in " + source_dir + ": " + first_line(status.err)});
  }
  git.is_repo = true;
  parse_status(status.out, git);
  if (git.dirty && !git.sha.empty()) {
    ProcessResult diff =
        processes.run({"git", "-C", source_dir, "--no-optional-locks", "diff", "HEAD", "--binary",
                       "--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/"});
    if (diff.exit_code != 0) {
      return unexpected(
          StageError{"git diff HEAD failed in " + source_dir + ": " + first_line(diff.err)});
    }
    git.diff = std::move(diff.out);
  }
  return git;
}

std::string short_sha(const GitInfo& git) {
  return git.sha.size() >= 7 ? git.sha.substr(0, 7) : "nogit";
}

}  // namespace tpurun::staging
