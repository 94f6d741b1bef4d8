#pragma once
// JSON with comments, for files people edit by hand. nlohmann::json would
// parse the comments too, but it forgets where each value was, and config
// errors must point at file:line.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tpurun::jsonc {

// Deep enough for any config; shallow enough that hostile input cannot
// exhaust the stack of this recursive-descent parser.
inline constexpr int kMaxDepth = 64;

// JSON pointer ("/pods/sim/ssh/user", "/pods/sim/workers/0"; "" is the root)
// -> 1-based line where the value's key starts (for array elements and the
// root: where the value itself starts).
using LineMap = std::map<std::string, int>;

struct Document {
  nlohmann::json value;
  LineMap lines;
};

// Accepts standard JSON plus `//` and `/* */` comments, trailing commas in
// objects and arrays, and a leading UTF-8 byte order mark. Rejects duplicate
// keys. Throws ConfigError(path, line, column, "expected ..., found ...") and
// nothing else, whatever the bytes.
Document parse(std::string_view text, const std::string& path);

// One key as a JSON pointer segment: "~" -> "~0", "/" -> "~1".
std::string pointer_segment(std::string_view key);

}  // namespace tpurun::jsonc
