#include "tpurun/util/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace tpurun {

namespace {

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Optimal string alignment distance: Levenshtein plus adjacent transpositions,
// because "hots" for "host" is the most common typo and should cost 1, not 2.
size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

}  // namespace

std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates) {
  if (word.empty()) return std::nullopt;
  const std::string w = lowercase(word);

  // A short, unambiguous prefix ("v4" for "v4-32") is as good a hint as a typo.
  std::optional<std::string> prefix_match;
  int prefix_matches = 0;
  for (const auto& c : candidates) {
    if (lowercase(c).rfind(w, 0) == 0) {
      prefix_match = c;
      ++prefix_matches;
    }
  }

  // Long words tolerate more typos; one edit is always allowed.
  const size_t limit = std::max<size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const auto& c : candidates) {
    // The distance is at least the difference in length; skipping early keeps
    // a pathological megabyte-long key from costing a megabyte-squared table.
    size_t gap = c.size() > w.size() ? c.size() - w.size() : w.size() - c.size();
    if (gap > limit) continue;
    size_t dist = edit_distance(w, lowercase(c));
    if (dist < best_distance) {  // first of equals wins: candidates come in a meaningful order
      best = c;
      best_distance = dist;
    }
  }
  if (best && best_distance == 0) return best;
  if (prefix_matches == 1) return prefix_match;
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  auto match = closest_match(word, candidates);
  if (!match) return "";
  return " (did you mean '" + *match + "'?)";
}

}  // namespace tpurun
