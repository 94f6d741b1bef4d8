#include "tpu/script_command.hpp"

#include "tpurun/transport/shell_quote.hpp"

namespace tpurun::tpu {

std::string script_command_line(Privilege privilege, const std::vector<std::string>& args) {
  const std::string tail = "sh -s --" + (args.empty() ? std::string() : " " + shell_join(args));
  switch (privilege) {
    case Privilege::prefer_root:
      // sudo -n refuses before reading stdin, so the fallback still gets the program.
      return "sudo -n " + tail + " 2>/dev/null || exec " + tail;
    case Privilege::root: return "exec sudo -n " + tail;
    case Privilege::login_user: break;
  }
  return "exec " + tail;
}

}  // namespace tpurun::tpu
