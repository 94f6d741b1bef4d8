#pragma once
// The byte vectors that scripts/gen-proto makes from the project's own .proto
// files (tests/unit/tpu/metrics_vectors/, profiler_vectors/): NAME.bin, read
// whole.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tpurun::testing {

inline std::string vector_bytes(const std::string& folder, const std::string& name) {
  const char* root = std::getenv("TPURUN_SOURCE_DIR");
  std::filesystem::path base =
      root != nullptr ? std::filesystem::path(root)
                      : std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
  std::filesystem::path file = base / "tests/unit/tpu" / folder / (name + ".bin");
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(in.good()) << file;
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace tpurun::testing
