#pragma once
// What git says about the project: HEAD, branch, uncommitted changes.
#include <string>

#include "tpurun/staging/snapshot.hpp"
#include "tpurun/util/result.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun::staging {

// is_repo is false outside a work tree (and when git is not installed). Any
// other git failure (e.g. "dubious ownership") is an error, since walking a
// repository without git's ignore rules could stage gigabytes of data.
// `dirty` here covers tracked changes only; untracked files are added by the
// caller, which is the one that lists them.
Result<GitInfo, StageError> read_git_info(const std::string& source_dir, ProcessRunner& processes);

// "2df5ac0", or "nogit" outside git (or before the first commit).
std::string short_sha(const GitInfo& git);

}  // namespace tpurun::staging
