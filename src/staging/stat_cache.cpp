#include "staging/stat_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "staging/fs_util.hpp"
#include "tpurun/util/atomic_file.hpp"

namespace tpurun::staging {
namespace {

constexpr std::string_view kMagic = "tpurun-stat-cache-v1\n";

template <typename T>
void put_raw(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Bounds-checked reading of the binary format; any overrun marks it bad.
struct Reader {
  std::string_view data;
  bool bad = false;

  template <typename T>
  T get() {
    T value{};
    if (data.size() < sizeof value) {
      bad = true;
      return value;
    }
    std::memcpy(&value, data.data(), sizeof value);
    data.remove_prefix(sizeof value);
    return value;
  }
  std::string_view bytes(std::size_t n) {
    if (data.size() < n) {
      bad = true;
      return {};
    }
    std::string_view out = data.substr(0, n);
    data.remove_prefix(n);
    return out;
  }
};

bool read_file(const std::string& path, std::string& out) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return false;
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

StatCache StatCache::load(const std::string& cache_dir, const std::string& source_dir) {
  StatCache cache;
  if (cache_dir.empty()) return cache;
  cache.dir_ = cache_dir;
  cache.source_ = source_dir;
  cache.file_ = fmt::format("{}/{:016x}.statcache", cache_dir,
                            XXH3_64bits(source_dir.data(), source_dir.size()));
  if (read_file(cache.file_, cache.data_) && !cache.parse()) cache.loaded_.clear();
  return cache;
}

bool StatCache::parse() {
  const std::string& data = data_;
  if (data.size() < kMagic.size() + sizeof(std::uint64_t)) return false;
  std::string_view body(data.data(), data.size() - sizeof(std::uint64_t));
  std::uint64_t checksum;
  std::memcpy(&checksum, data.data() + body.size(), sizeof checksum);
  if (XXH3_64bits(body.data(), body.size()) != checksum || !body.starts_with(kMagic)) return false;
  Reader in{body.substr(kMagic.size())};
  auto source = in.bytes(in.get<std::uint32_t>());
  if (in.bad || source != source_) return false;  // another project's file under a colliding name
  auto count = in.get<std::uint64_t>();
  loaded_.reserve(count < 10'000'000 ? count : 0);
  for (std::uint64_t i = 0; i < count && !in.bad; ++i) {
    std::string_view path = in.bytes(in.get<std::uint32_t>());
    Entry entry;
    entry.stamp.size = in.get<std::uint64_t>();
    entry.stamp.mtime_ns = in.get<std::int64_t>();
    entry.stamp.ctime_ns = in.get<std::int64_t>();
    entry.stamp.inode = in.get<std::uint64_t>();
    entry.stamp.mode = in.get<std::uint32_t>();
    entry.hash.high = in.get<std::uint64_t>();
    entry.hash.low = in.get<std::uint64_t>();
    if (!in.bad) loaded_.emplace_back(path, entry);
  }
  if (in.bad || !in.data.empty()) return false;
  // Saved in path order; a file that is not is still usable once sorted.
  auto by_path = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(loaded_.begin(), loaded_.end(), by_path))
    std::sort(loaded_.begin(), loaded_.end(), by_path);
  return true;
}

std::vector<std::optional<ContentHash>> StatCache::known_hashes(
    const std::vector<SourceFile>& files) const {
  std::vector<std::optional<ContentHash>> known(files.size());
  auto cached = loaded_.begin();
  for (std::size_t i = 0; i < files.size() && cached != loaded_.end(); ++i) {
    std::string_view path = files[i].path;
    while (cached != loaded_.end() && cached->first < path) ++cached;
    if (cached != loaded_.end() && cached->first == path &&
        cached->second.stamp == files[i].stamp) {
      known[i] = cached->second.hash;
    }
  }
  return known;
}

void StatCache::put(const std::string& path, const FileStamp& stamp, const ContentHash& hash) {
  if (!enabled() || stamp.mtime_ns >= racy_after_ns_) return;
  next_.emplace_back(path, Entry{stamp, hash});
}

std::string StatCache::save() const {
  if (!enabled()) return "";
  std::string out(kMagic);
  put_raw(out, static_cast<std::uint32_t>(source_.size()));
  out += source_;
  put_raw(out, static_cast<std::uint64_t>(next_.size()));
  for (const auto& [path, entry] : next_) {
    put_raw(out, static_cast<std::uint32_t>(path.size()));
    out += path;
    put_raw(out, entry.stamp.size);
    put_raw(out, entry.stamp.mtime_ns);
    put_raw(out, entry.stamp.ctime_ns);
    put_raw(out, entry.stamp.inode);
    put_raw(out, entry.stamp.mode);
    put_raw(out, entry.hash.high);
    put_raw(out, entry.hash.low);
  }
  put_raw(out, static_cast<std::uint64_t>(XXH3_64bits(out.data(), out.size())));

  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  try {
    write_file_atomic(file_, out);
  } catch (const std::exception& e) {
    return std::string("stat cache not saved: ") + e.what();
  }
  return "";
}

}  // namespace tpurun::staging
