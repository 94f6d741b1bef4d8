#include "tpurun/shell_quote.hpp"

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

}  // namespace tpurun
