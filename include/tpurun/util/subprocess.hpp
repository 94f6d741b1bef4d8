#pragma once
// Runs a local program, streaming its output as it arrives. The child gets its
// own process group, so that Ctrl-C can stop everything it started.
#include <optional>
#include <string>
#include <vector>

#include "tpurun/transport/outcome.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"

namespace tpurun {

// Error: the program could not be started (the message says why).
// On cancel the group gets SIGINT, then SIGTERM after 1s, SIGKILL after 3s.
Result<CommandExit, std::string> run_subprocess(const std::vector<std::string>& argv,
                                                const std::string& stdin_data,
                                                const std::optional<std::string>& cwd,
                                                OutputSink& sink, const CancelToken& cancel);

}  // namespace tpurun
