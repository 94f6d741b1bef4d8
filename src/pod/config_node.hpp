#pragma once
// A view of one value in a parsed config file that remembers where it came
// from, so every complaint can start with "file:line: pods.sim.ssh.user:".
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jsonc.hpp"

namespace tpurun {

struct ConfigSource {
  std::string file;
  jsonc::LineMap lines;
};

class ConfigNode {
 public:
  // The root of a document.
  ConfigNode(const nlohmann::json& value, const ConfigSource& source);

  const nlohmann::json& json() const { return *value_; }
  const std::string& key_path() const { return key_path_; }  // "pods.sim.workers[1]"
  int line() const;
  [[noreturn]] void fail(const std::string& message) const;

  // Objects. Every accessor fails with a "expected an object" message first
  // when the value is something else.
  void allow_only(const std::vector<std::string>& known_keys) const;  // unknown key -> did you mean
  std::optional<ConfigNode> get(const std::string& key) const;
  ConfigNode require(const std::string& key) const;
  std::vector<std::pair<std::string, ConfigNode>> members() const;  // in file order

  // Arrays.
  std::vector<ConfigNode> elements() const;

  // Scalars, type-checked.
  std::string as_string() const;
  std::string as_nonempty_string() const;
  bool as_bool() const;
  std::int64_t as_integer() const;

  // What the value is, for "expected X, found Y" messages: `a string ("10")`.
  std::string value_text() const;

 private:
  ConfigNode(const nlohmann::json& value, std::string pointer, std::string key_path,
             const ConfigSource& source);
  ConfigNode child(const std::string& key) const;
  void expect_object() const;

  const nlohmann::json* value_;
  std::string pointer_;
  std::string key_path_;
  const ConfigSource* source_;
};

}  // namespace tpurun
