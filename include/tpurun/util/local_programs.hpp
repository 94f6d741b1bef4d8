#pragma once
// The local side effects of tpurun tensorboard: finding the program, checking
// the port, naming this host, and replacing tpurun with TensorBoard.
#include <optional>
#include <string>
#include <vector>

#include "tpurun/util/system.hpp"

namespace tpurun {

// The first executable `name` on $PATH, if any.
std::optional<std::string> find_on_path(const std::string& name, const Environment& env);
// Binds 127.0.0.1:port (or every interface) and lets go; "" when that works,
// else what stands in the way, e.g. "port 6006 is in use".
std::string port_problem(int port, bool all_interfaces);
// This host's fully qualified name, as `hostname -f` prints it.
std::string host_fqdn();
// execv: returns only on failure, with the reason.
std::string exec_program(const std::string& path, const std::vector<std::string>& argv);

}  // namespace tpurun
