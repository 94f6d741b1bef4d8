#include "tpurun/transport/shell_quote.hpp"

namespace tpurun {

std::string shell_quote(std::string_view arg) {
  std::string quoted;
  quoted.reserve(arg.size() + 2);
  quoted.push_back('\'');
  for (char c : arg) {
    if (c == '\'') {
      quoted += "'\\''";  // close, escaped quote, reopen
    } else {
      quoted.push_back(c);
    }
  }
  quoted.push_back('\'');
  return quoted;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string joined;
  for (const std::string& arg : argv) {
    if (!joined.empty()) joined.push_back(' ');
    joined += shell_quote(arg);
  }
  return joined;
}

std::string shell_display(const std::vector<std::string>& argv) {
  auto plain = [](const std::string& arg, bool first) {
    if (arg.empty()) return false;
    for (char c : arg) {
      if (first && c == '=') return false;  // NAME=value first would be an assignment
      const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
      if (!safe) return false;
    }
    return true;
  };
  std::string joined;
  for (const std::string& arg : argv) {
    const bool first = joined.empty();
    if (!first) joined.push_back(' ');
    joined += plain(arg, first) ? arg : shell_quote(arg);
  }
  return joined;
}

RemoteCommand python3_command(std::string_view program, const std::vector<std::string>& words) {
  std::string line = "exec python3 -I -S /dev/fd/3";
  for (const auto& word : words) line += " " + word;
  // dd takes exactly the program's bytes from stdin (fullblock: it reads
  // until it has them, and no further), so what follows them is the
  // program's own input; the heredoc hands them to python3 as a file.
  line += " 3<<TPURUN_PROGRAM\n$(exec dd bs=" + std::to_string(program.size()) +
          " count=1 iflag=fullblock 2>/dev/null)\nTPURUN_PROGRAM";
  return {line, std::string(program)};
}

}  // namespace tpurun
