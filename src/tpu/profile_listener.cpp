// Who serves the profiler port on a worker, asked before `tpurun profile`
// calls it (worker/profile_listener.sh): its owner, and for the user's own
// listener, its process and run. So a profile never reaches another user's
// server, nor a job of another of one's runs. It runs as the login user:
// sudo would make every listener "other".
#include <fmt/format.h>

#include <sstream>

#include "tpu/script_command.hpp"
#include "tpurun/tpu/profile.hpp"
#include "tpurun/worker/programs.hpp"

namespace tpurun {

RemoteCommand build_listener_command(int port) {
  RemoteCommand command{tpu::script_command_line(tpu::Privilege::login_user, {std::to_string(port)}),
                        std::string(worker::kProfileListenerSh)};
  command.timeout_ms = 15000;
  return command;
}

Result<PortListener, std::string> parse_listener(std::string_view out) {
  std::istringstream in{std::string(out)};
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string head;
    words >> head;
    if (head == "none") return PortListener{};
    if (head != "listener") continue;
    PortListener l;
    l.listening = true;
    std::string whose, pid, run;
    if (!(words >> l.uid >> l.user >> whose)) break;
    if (l.user == "-") l.user = "uid " + std::to_string(l.uid);
    l.mine = whose == "mine";
    if (l.mine) {
      words >> pid >> run;
      if (!pid.empty() && pid != "-" && pid.find_first_not_of("0123456789") == std::string::npos) {
        l.pid = std::stoi(pid);
      }
      if (run != "-") l.run_id = run;
    }
    return l;
  }
  return unexpected(fmt::format("the port check answered {}", out.empty() ? "nothing" : "\"" + std::string(out) + "\""));
}

}  // namespace tpurun
