#pragma once
// Everything written so far to a temp FILE* (std::tmpfile()), for tests of
// code that prints.
#include <cstdio>
#include <string>

namespace tpurun::testing {

inline std::string slurp(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  return text;
}

}  // namespace tpurun::testing
