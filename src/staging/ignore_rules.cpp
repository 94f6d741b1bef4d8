#include "staging/ignore_rules.hpp"

#include <fnmatch.h>

#include <algorithm>

namespace tpurun::staging {
namespace {

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

template <typename Segment>
bool segment_matches(const Segment& pattern, std::string_view name) {
  if (pattern.literal) return pattern.text == name;
  // Within one segment there is no '/', so FNM_PATHNAME changes nothing; a
  // leading dot is matched by '*' as in gitignore (no FNM_PERIOD).
  return ::fnmatch(pattern.text.c_str(), std::string(name).c_str(), 0) == 0;
}

template <typename Segment>
bool match_segments(const std::vector<Segment>& pattern, size_t p,
                    const std::vector<std::string_view>& path, size_t s) {
  while (p < pattern.size()) {
    if (pattern[p].text == "**") {
      // A trailing "**" means "everything inside", so at least one segment.
      if (p + 1 == pattern.size()) return s < path.size();
      // With no other "**" after it, the rest has a fixed length, so only one
      // position can match ("**/x" is the common case: x is the last segment).
      bool fixed_tail =
          std::none_of(pattern.begin() + static_cast<std::ptrdiff_t>(p) + 1, pattern.end(),
                       [](const Segment& seg) { return seg.text == "**"; });
      if (fixed_tail) {
        size_t tail = pattern.size() - p - 1;
        if (path.size() < s + tail) return false;
        s = path.size() - tail;
        ++p;
        continue;
      }
      for (size_t skip = s; skip <= path.size(); ++skip) {
        if (match_segments(pattern, p + 1, path, skip)) return true;
      }
      return false;
    }
    if (s == path.size() || !segment_matches(pattern[p], path[s])) return false;
    ++p, ++s;
  }
  return s == path.size();
}

std::string_view trim_trailing_spaces(std::string_view line) {
  while (!line.empty() && line.back() == ' ') {
    if (line.size() >= 2 && line[line.size() - 2] == '\\') {
      // "\ " keeps the space; the backslash is dropped by fnmatch's escaping.
      break;
    }
    line.remove_suffix(1);
  }
  return line;
}

}  // namespace

void IgnoreRules::add_text(std::string_view text) {
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    add_pattern(line);
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
}

void IgnoreRules::add_pattern(std::string_view line) {
  line = trim_trailing_spaces(line);
  if (line.empty() || line.front() == '#') return;
  Rule rule;
  if (line.front() == '!') {
    rule.negated = true;
    line.remove_prefix(1);
  } else if (line.front() == '\\') {
    line.remove_prefix(1);  // "\#file" and "\!file" are literal
  }
  if (!line.empty() && line.back() == '/') {
    rule.dir_only = true;
    while (!line.empty() && line.back() == '/') line.remove_suffix(1);
  }
  // Any slash left (leading or inner) anchors the pattern at the root.
  bool anchored = line.find('/') != std::string_view::npos;
  if (!line.empty() && line.front() == '/') line.remove_prefix(1);
  if (line.empty()) return;
  if (!anchored) rule.segments.push_back({"**", false});
  for (std::string_view part : split_path(line)) {
    bool literal = part.find_first_of("*?[\\") == std::string_view::npos;
    rule.segments.push_back({std::string(part), literal});
  }
  rules_.push_back(std::move(rule));
}

bool IgnoreRules::matches(std::string_view path, bool is_dir) const {
  std::vector<std::string_view> parts = split_path(path);
  for (auto rule = rules_.rbegin(); rule != rules_.rend(); ++rule) {
    if (rule->dir_only && !is_dir) continue;
    if (match_segments(rule->segments, 0, parts, 0)) return !rule->negated;
  }
  return false;
}

bool IgnoreRules::ignored(std::string_view path, bool is_dir) const {
  if (rules_.empty()) return false;
  for (size_t slash = path.find('/'); slash != std::string_view::npos;
       slash = path.find('/', slash + 1)) {
    if (matches(path.substr(0, slash), true)) return true;
  }
  return matches(path, is_dir);
}

// A home directory staged as if it were a project: its keys, credentials,
// shell histories and tpurun's own dir stay home (docs/runs.md, "Staging a
// home directory"). The names are where ssh, gpg, gcloud, the AWS, Azure,
// Kubernetes, Docker, GitHub and Hugging Face CLIs, pip, git and netrc keep
// their secrets by default.
const std::vector<std::string>& home_secret_names() {
  static const std::vector<std::string> names = {
      ".ssh/",       ".gnupg/",         ".config/gcloud/", ".aws/",        ".azure/",     ".kube/",
      ".docker/",    ".config/gh/",     ".huggingface/",   ".cache/",      ".netrc",      ".git-credentials",
      ".pypirc",     ".password-store/", ".local/share/keyrings/", ".tpurun/", ".*_history"};
  return names;
}

IgnoreRules IgnoreRules::home_secrets() {
  IgnoreRules rules;
  for (const std::string& name : home_secret_names()) rules.add_pattern("/" + name);
  return rules;
}

IgnoreRules IgnoreRules::walk_defaults() {
  IgnoreRules rules;
  rules.add_text(".git\n__pycache__/\n.pytest_cache/\n.mypy_cache/\n*.pyc\n.ipynb_checkpoints/\n");
  return rules;
}

}  // namespace tpurun::staging
