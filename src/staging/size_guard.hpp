#pragma once
// The size limit: a snapshot is code, not data.
#include <cstdint>
#include <optional>
#include <vector>

#include "staging/source_file.hpp"
#include "tpurun/staging/snapshot.hpp"

namespace tpurun::staging {

std::uint64_t total_bytes(const std::vector<SourceFile>& files);

// An error listing the largest files when the total is over `limit`.
std::optional<StageError> check_size_limit(const std::vector<SourceFile>& files,
                                           std::uint64_t limit);

}  // namespace tpurun::staging
