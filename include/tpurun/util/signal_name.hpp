#pragma once
// A signal's abbreviation as `kill -l` prints it ("TERM", "KILL"), or its
// number as text when it has none (real-time signals).
#include <string>

namespace tpurun {

std::string signal_abbrev(int sig);

}  // namespace tpurun
