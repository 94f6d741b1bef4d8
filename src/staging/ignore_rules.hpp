#pragma once
// .tpurunignore: gitignore-style patterns, matched against paths relative to
// the project root. Supports `#` comments, `!` negation, a leading `/` (or any
// inner `/`) to anchor at the root, a trailing `/` for directories only, and
// `*`, `?`, `[...]`, `**` globs. The last matching pattern wins, and nothing
// inside an ignored directory can be re-included (as with git).
#include <string>
#include <string_view>
#include <vector>

namespace tpurun::staging {

class IgnoreRules {
 public:
  // Adds the patterns of a .tpurunignore (or .gitignore-like) text.
  void add_text(std::string_view text);
  void add_pattern(std::string_view line);
  // Adds another set after these ones (so it wins where both match).
  void append(const IgnoreRules& later) {
    rules_.insert(rules_.end(), later.rules_.begin(), later.rules_.end());
  }

  // The verdict for this path alone, ignoring its parent directories.
  bool matches(std::string_view path, bool is_dir) const;
  // Whether the path or any of its parent directories is ignored.
  bool ignored(std::string_view path, bool is_dir) const;
  bool empty() const { return rules_.empty(); }

  // What a walk outside git skips: VCS and Python cache clutter.
  static IgnoreRules walk_defaults();
  // What a stage of a home directory leaves out (home_secret_names()).
  static IgnoreRules home_secrets();

 private:
  struct Segment {
    std::string text;      // "**" matches any number of path segments
    bool literal = false;  // no glob characters: a plain comparison will do
  };
  struct Rule {
    std::vector<Segment> segments;
    bool negated = false;
    bool dir_only = false;
  };
  std::vector<Rule> rules_;
};

// Where keys, credentials, shell histories and tpurun's own files sit in a
// home directory, as patterns relative to it ("dir/" for a directory).
const std::vector<std::string>& home_secret_names();

}  // namespace tpurun::staging
