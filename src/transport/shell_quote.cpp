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

std::string python3_command(std::string_view program, const std::vector<std::string>& words) {
  std::string command = "exec python3 -I -S -c " + shell_quote(program);
  for (const auto& word : words) command += " " + word;
  return command;
}

}  // namespace tpurun
