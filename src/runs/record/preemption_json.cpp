#include "tpurun/runs/record/preemption_json.hpp"

#include <cmath>

namespace tpurun {
namespace {

double tenths(double s) { return std::round(s * 10) / 10; }

}  // namespace

nlohmann::json preemption_to_json(const Preemption& p) {
  nlohmann::json j{{"tpu", p.tpu},         {"state", p.state},   {"detail", p.detail},
                   {"at", p.at},           {"attempt", p.attempt}, {"node_id", p.node_id},
                   {"since", p.since},     {"action", p.action}, {"why", p.why}};
  if (p.recreated()) {
    j.update({{"new_id", p.new_id},
              {"resumed_at", p.resumed_at},
              {"resumed_attempt", p.resumed_attempt},
              {"down_s", tenths(p.down_s)},
              {"times_s",
               {{"api", tenths(p.api_s)}, {"keys", tenths(p.keys_s)}, {"setup", tenths(p.setup_s)},
                {"launch", tenths(p.launch_s)}}}});
  }
  return j;
}

Preemption preemption_from_json(const nlohmann::json& j) {
  Preemption p;
  p.tpu = j.value("tpu", "");
  p.state = j.value("state", "");
  p.detail = j.value("detail", "");
  p.at = j.value("at", "");
  p.attempt = j.value("attempt", 0);
  p.node_id = j.value("node_id", "");
  p.since = j.value("since", "");
  p.action = j.value("action", "");
  p.why = j.value("why", "");
  p.new_id = j.value("new_id", "");
  p.resumed_at = j.value("resumed_at", "");
  p.resumed_attempt = j.value("resumed_attempt", 0);
  p.down_s = j.value("down_s", 0.0);
  if (j.contains("times_s") && j["times_s"].is_object()) {
    const auto& t = j["times_s"];
    p.api_s = t.value("api", 0.0);
    p.keys_s = t.value("keys", 0.0);
    p.setup_s = t.value("setup", 0.0);
    p.launch_s = t.value("launch", 0.0);
  }
  return p;
}

}  // namespace tpurun
