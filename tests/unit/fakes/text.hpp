#pragma once
#include <string>

namespace tpurun::testing {

// Column padding depends on the widest cell; compare with runs of spaces squeezed.
inline std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out.push_back(c);
  }
  return out;
}

}  // namespace tpurun::testing
