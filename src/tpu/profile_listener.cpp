// Who serves the profiler port on a worker, asked before `tpurun profile`
// calls it: the kernel's socket table gives the listener's owner to anyone
// (/proc/net/tcp{,6}: local address, state 0A = LISTEN, uid, inode); for the
// user's own listener, the process holding that socket and its run
// (TPURUN_RUN_ID in its environment, readable by its owner). So a profile
// never reaches another user's server, nor a job of another of one's runs.
#include <fmt/format.h>

#include <sstream>

#include "tpu/scripts.hpp"
#include "tpurun/tpu/profile.hpp"

namespace tpurun {
namespace {

// Answers one line: "none", "listener UID USER other", or
// "listener UID USER mine PID|- RUN_ID|-". Runs as the login user: sudo would
// make every listener "other".
constexpr const char* kListenerScript = R"SH(# tpurun profiler port (TPURUN-LISTENER 1)
PATH=/usr/sbin:/usr/bin:/sbin:/bin; LC_ALL=C; export PATH LC_ALL
hex=$(printf '%04X' "$1")
line=$(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
  awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $8, $10; exit }')
if [ -z "$line" ]; then echo none; exit 0; fi
set -- $line
uid=$1 inode=$2
user=$(getent passwd "$uid" | cut -d: -f1)
if [ "$uid" != "$(id -u)" ]; then echo "listener $uid ${user:--} other"; exit 0; fi
pid=$(ls -l /proc/[0-9]*/fd 2>/dev/null | awk -v s="socket:[$inode]" '
  /^\/proc\/[0-9]+\/fd:$/ { split($0, a, "/"); p = a[3]; next }
  $NF == s { print p; exit }')
run=
[ -n "$pid" ] && run=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^TPURUN_RUN_ID=//p' | head -n 1)
echo "listener $uid ${user:--} mine ${pid:--} ${run:--}"
)SH";

}  // namespace

RemoteCommand build_listener_command(int port) {
  RemoteCommand command{tpu::script_command_line(tpu::Privilege::login_user, {std::to_string(port)}),
                        kListenerScript};
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
