#include "config_node.hpp"

#include <algorithm>
#include <limits>

#include "tpurun/pod/config.hpp"
#include "tpurun/util/suggest.hpp"

namespace tpurun {

ConfigNode::ConfigNode(const nlohmann::json& value, const ConfigSource& source)
    : ConfigNode(value, "", "", source) {}

ConfigNode::ConfigNode(const nlohmann::json& value, std::string pointer, std::string key_path,
                       const ConfigSource& source)
    : value_(&value),
      pointer_(std::move(pointer)),
      key_path_(std::move(key_path)),
      source_(&source) {}

int ConfigNode::line() const {
  auto it = source_->lines.find(pointer_);
  return it == source_->lines.end() ? 0 : it->second;
}

void ConfigNode::fail(const std::string& message) const {
  throw ConfigError(source_->file, line(),
                    key_path_.empty() ? message : key_path_ + ": " + message);
}

ConfigNode ConfigNode::child(const std::string& key) const {
  return ConfigNode(value_->at(key), pointer_ + "/" + jsonc::pointer_segment(key),
                    key_path_.empty() ? key : key_path_ + "." + key, *source_);
}

void ConfigNode::expect_object() const {
  if (!value_->is_object()) fail("expected an object, found " + value_text());
}

void ConfigNode::allow_only(const std::vector<std::string>& known_keys) const {
  // members() is in file order, so the first unknown key is reported first
  // and fixing errors top-down works.
  for (const auto& [key, node] : members()) {
    if (std::find(known_keys.begin(), known_keys.end(), key) != known_keys.end()) continue;
    std::string hint = did_you_mean(key, known_keys);
    if (hint.empty()) {
      hint = " (expected one of:";
      for (const auto& k : known_keys) hint += " " + k;
      hint += ")";
    }
    node.fail("unknown key" + hint);
  }
}

std::optional<ConfigNode> ConfigNode::get(const std::string& key) const {
  expect_object();
  if (!value_->contains(key)) return std::nullopt;
  return child(key);
}

ConfigNode ConfigNode::require(const std::string& key) const {
  expect_object();
  if (!value_->contains(key)) fail("missing required key \"" + key + "\"");
  return child(key);
}

std::vector<std::pair<std::string, ConfigNode>> ConfigNode::members() const {
  expect_object();
  std::vector<std::pair<std::string, ConfigNode>> out;
  for (const auto& item : value_->items()) out.emplace_back(item.key(), child(item.key()));
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second.line() < b.second.line(); });
  return out;
}

std::vector<ConfigNode> ConfigNode::elements() const {
  if (!value_->is_array()) fail("expected an array, found " + value_text());
  std::vector<ConfigNode> out;
  for (size_t i = 0; i < value_->size(); ++i) {
    out.push_back(ConfigNode((*value_)[i], pointer_ + "/" + std::to_string(i),
                             key_path_ + "[" + std::to_string(i) + "]", *source_));
  }
  return out;
}

std::string ConfigNode::as_string() const {
  if (!value_->is_string()) fail("expected a string, found " + value_text());
  return value_->get<std::string>();
}

std::string ConfigNode::as_nonempty_string() const {
  std::string s = as_string();
  if (s.empty()) fail("must not be empty");
  return s;
}

bool ConfigNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, found " + value_text());
  return value_->get<bool>();
}

std::int64_t ConfigNode::as_integer() const {
  if (value_->is_number_integer() && !value_->is_number_unsigned())
    return value_->get<std::int64_t>();
  if (value_->is_number_unsigned()) {
    auto u = value_->get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return static_cast<std::int64_t>(u);
    fail("number too large");
  }
  fail("expected an integer, found " + value_text());
}

std::string ConfigNode::value_text() const {
  const auto& v = *value_;
  std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  if (v.is_string()) return "a string (" + text + ")";
  if (v.is_boolean()) return text;
  if (v.is_null()) return "null";
  if (v.is_number_integer()) return "an integer (" + text + ")";
  return "a number (" + text + ")";
}

}  // namespace tpurun
