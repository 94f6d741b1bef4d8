#pragma once
// Who is running tpurun and where its local caches live, plus the random
// parts of names. Small, so that tests can see what goes into names.
#include <string>

#include "tpurun/util/system.hpp"

namespace tpurun {

std::string local_user(const Environment& env);          // $USER, else the passwd entry
std::string cache_dir(const Environment& env);           // $XDG_CACHE_HOME/tpurun or ~/.cache/tpurun
std::string state_dir(const Environment& env);           // $XDG_STATE_HOME/tpurun or ~/.local/state/tpurun
std::string host_name();                                 // gethostname(), "" when it fails
std::string random_suffix();                             // 6 chars of [a-z0-9]
std::string project_name(const std::string& directory);  // the directory's base name

}  // namespace tpurun
