#pragma once
// The local stat cache: (path, size, mtime, ctime, inode, mode) -> content
// hash, one file per project, so that an unchanged file is not read again.
// A missing or corrupt cache file is simply an empty cache.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "staging/content_hash.hpp"
#include "staging/source_file.hpp"

namespace tpurun::staging {

class StatCache {
 public:
  StatCache() = default;  // disabled: finds nothing, saves nothing

  // `source_dir` should be canonical (realpath): it names the cache file.
  static StatCache load(const std::string& cache_dir, const std::string& source_dir);

  // The cached hash of each file whose stamp is unchanged, by index into
  // `files` (sorted by path, as the cache is: one merge pass, no lookups).
  std::vector<std::optional<ContentHash>> known_hashes(const std::vector<SourceFile>& files) const;

  // Records a file for the next save. Files modified at or after
  // `racy_after_ns` are left out: another write within the same timestamp
  // tick could change them without changing their stamp (git's "racy"
  // files). An older mtime is safe, as any later write would set it to now.
  void put(const std::string& path, const FileStamp& stamp, const ContentHash& hash);
  void set_racy_after(std::int64_t ns) { racy_after_ns_ = ns; }

  // Replaces the cache file atomically with what was put. Returns an error text, or "".
  std::string save() const;
  bool enabled() const { return !file_.empty(); }

 private:
  struct Entry {
    FileStamp stamp;
    ContentHash hash;
  };
  bool parse();

  std::string dir_;
  std::string file_;
  std::string source_;
  std::int64_t racy_after_ns_ = INT64_MAX;
  std::string data_;                                        // the file as read
  std::vector<std::pair<std::string_view, Entry>> loaded_;  // paths point into data_
  std::vector<std::pair<std::string, Entry>> next_;
};

}  // namespace tpurun::staging
