// A claim's JSON form: absolute UTC times, so that clock skew between dev VMs
// only shifts when each of them sees it expire, never what was agreed.
#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tpurun/board/claims.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

WallClock::time_point parse_utc(const std::string& text, const char* field) {
  const auto t = parse_utc_time(text);
  if (!t) throw std::runtime_error(fmt::format("{} '{}' is not a UTC time", field, text));
  return *t;
}

}  // namespace

std::string claim_to_json(const Claim& c) {
  nlohmann::json doc{{"pod", c.pod},   {"seq", c.seq},
                     {"user", c.user}, {"host", c.host},
                     {"note", c.note}, {"created_at", format_utc_time(c.created_at)},
                     {"expires_at", format_utc_time(c.expires_at)}};
  doc["released_at"] = c.released_at ? nlohmann::json(format_utc_time(*c.released_at)) : nlohmann::json(nullptr);
  return doc.dump(2) + "\n";
}

Claim claim_from_json(const std::string& text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) throw std::runtime_error("not a JSON object");
  Claim c;
  try {
    c.pod = doc.at("pod").get<std::string>();
    c.seq = doc.at("seq").get<long long>();
    c.user = doc.at("user").get<std::string>();
    c.host = doc.value("host", "");
    c.note = doc.value("note", "");
    c.created_at = parse_utc(doc.at("created_at").get<std::string>(), "created_at");
    c.expires_at = parse_utc(doc.at("expires_at").get<std::string>(), "expires_at");
    if (doc.contains("released_at") && !doc["released_at"].is_null())
      c.released_at = parse_utc(doc["released_at"].get<std::string>(), "released_at");
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("missing or mistyped field: ") + e.what());
  }
  return c;
}

}  // namespace tpurun
