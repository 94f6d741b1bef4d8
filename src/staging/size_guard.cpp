#include "staging/size_guard.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "staging/fs_util.hpp"

namespace tpurun::staging {

std::uint64_t total_bytes(const std::vector<SourceFile>& files) {
  std::uint64_t total = 0;
  for (const SourceFile& file : files) total += file.stamp.size;
  return total;
}

std::optional<StageError> check_size_limit(const std::vector<SourceFile>& files,
                                           std::uint64_t limit) {
  std::uint64_t total = total_bytes(files);
  if (total <= limit) return std::nullopt;
  std::vector<const SourceFile*> largest;
  for (const SourceFile& file : files) largest.push_back(&file);
  size_t shown = std::min<size_t>(5, largest.size());
  std::partial_sort(
      largest.begin(), largest.begin() + static_cast<std::ptrdiff_t>(shown), largest.end(),
      [](const SourceFile* a, const SourceFile* b) { return a->stamp.size > b->stamp.size; });
  std::string message =
      fmt::format("the code snapshot would be {} in {} files, over the {} limit. Largest files:\n",
                  human_size(total), files.size(), human_size(limit));
  for (size_t i = 0; i < shown; ++i) {
    message += fmt::format("  {:>10}  {}\n", human_size(largest[i]->stamp.size), largest[i]->path);
  }
  message +=
      "Datasets do not belong in a code snapshot: move data out of the code directory, or list it "
      "in "
      ".tpurunignore (gitignore syntax) at the project root.";
  return StageError{message};
}

}  // namespace tpurun::staging
