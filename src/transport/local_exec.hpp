#pragma once
// A command on this machine held open as an ExecStream (the local transport's
// open_exec, and unit tests that need a real shell behind one).
#include <memory>
#include <string>

#include "tpurun/transport/transport.hpp"

namespace tpurun {

Result<std::unique_ptr<ExecStream>, TransportError> open_local_exec(const std::string& command_line);

}  // namespace tpurun
