#pragma once
// What this binary is: its version and the commit it was built from
// (scripts/packaging/version.cmake fills them in at build time).
#include <string>

namespace tpurun {

struct BuildInfo {
  const char* version;  // "0.1.0+git412.94a992b"
  const char* git_sha;  // the full sha, or "unknown" outside a git checkout
  bool dirty;           // built with uncommitted changes
};

BuildInfo build_info();

// `tpurun --version`: "tpurun 0.1.0+git412.94a992b (commit 94a992b...)".
std::string version_line();

}  // namespace tpurun
