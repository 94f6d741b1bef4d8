#pragma once
// "did you mean" hints for unknown names (pods, keys, subcommands).
#include <optional>
#include <string>
#include <vector>

namespace tpurun {

// The closest candidate within a small edit distance, if any.
std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates);
// " (did you mean 'x'?)" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace tpurun
