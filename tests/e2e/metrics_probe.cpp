// tpurun-metrics-probe: the metrics client alone, for test_metrics_route.sh.
// Connects to one worker with tpurun's SSH transport, fetches libtpu's
// metrics through a direct-tcpip channel, prints the outcome as one JSON line.
//
//   tpurun-metrics-probe HOST SSH_PORT IDENTITY KNOWN_HOSTS [METRICS_PORT [DEADLINE_MS]]
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "tpurun/tpu/metrics.hpp"
#include "transport/ssh_transport.hpp"

using namespace tpurun;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s HOST SSH_PORT IDENTITY KNOWN_HOSTS [METRICS_PORT [DEADLINE_MS]]\n", argv[0]);
    return 2;
  }
  SshTransportOptions options;
  options.ssh.identity_file = argv[3];
  options.ssh.known_hosts = {argv[4]};
  options.ssh.connect_timeout_s = 5;
  SshTransport transport(options);
  Worker worker;
  worker.host = argv[1];
  worker.port = std::atoi(argv[2]);
  auto connection = transport.connect(worker, CancelToken());
  if (!connection) {
    std::printf("%s\n", nlohmann::json{{"outcome", "connect_error"}, {"message", connection.error().message}}.dump().c_str());
    return 1;
  }
  MetricsEndpoint endpoint;
  if (argc > 5) endpoint.port = std::atoi(argv[5]);
  if (argc > 6) endpoint.deadline_ms = std::atoi(argv[6]);
  TpuMetricsOutcome outcome = fetch_tpu_metrics(**connection, endpoint, CancelToken());

  nlohmann::json j;
  if (auto* f = std::get_if<TpuFigures>(&outcome)) {
    j["outcome"] = "figures";
    j["chips"] = nlohmann::json::array();
    for (const ChipFigures& c : f->chips) {
      nlohmann::json chip{{"device_id", c.device_id}};
      if (c.hbm_used_bytes) chip["hbm_used"] = *c.hbm_used_bytes;
      if (c.hbm_total_bytes) chip["hbm_total"] = *c.hbm_total_bytes;
      if (c.duty_cycle_pct) chip["duty_cycle_pct"] = *c.duty_cycle_pct;
      j["chips"].push_back(chip);
    }
    j["notes"] = f->notes;
  } else if (auto* n = std::get_if<NoTpuWorkload>(&outcome)) {
    j = {{"outcome", "no_workload"}, {"detail", n->detail}};
  } else {
    const auto& e = std::get<MetricsFailure>(outcome);
    j = {{"outcome", "error"}, {"message", e.message}};
    if (e.grpc) j["grpc"] = grpc_code_name(*e.grpc);
    if (e.transport) j["transport"] = to_string(*e.transport);
  }
  std::printf("%s\n", j.dump().c_str());
  return 0;
}
