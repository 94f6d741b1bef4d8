#include "tpurun/util/version.hpp"

#include <fmt/format.h>

namespace tpurun {

std::string version_line() {
  const BuildInfo info = build_info();
  return fmt::format("tpurun {} (commit {}{})", info.version, info.git_sha,
                     info.dirty ? ", with uncommitted changes" : "");
}

}  // namespace tpurun
