// board.gcloud: one `gcloud ... tpu-vm list` per zone; READY TPU VMs become
// pods whose workers come from the same fields `describe` gives (one call per
// zone, none per TPU).
#include "board/board_gcloud.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tpurun/pod/queued_resource.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/util/duration.hpp"
#include <stdexcept>

namespace tpurun {
namespace {

std::string text_field(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool in_config(const ConfigFile& config, const std::string& name) {
  if (config.pods.count(name)) return true;
  for (const auto& [_, pod] : config.pods) {
    if (pod.gcloud && pod.gcloud->name == name) return true;
  }
  return false;
}

std::string first_line(const std::string& text) {
  size_t start = text.find_first_not_of(" \n");
  if (start == std::string::npos) return "(no message)";
  return text.substr(start, text.find('\n', start) - start);
}

}  // namespace

std::vector<ListedTpu> parse_tpu_list(const std::string& json_text, const std::string& zone,
                                      const BoardGcloud& board) {
  auto doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_array()) throw std::runtime_error("gcloud did not print a JSON array");
  std::vector<ListedTpu> out;
  for (const auto& node : doc) {
    if (!node.is_object()) continue;
    ListedTpu tpu;
    tpu.name = text_field(node, "name");
    tpu.name = tpu.name.substr(tpu.name.rfind('/') == std::string::npos ? 0 : tpu.name.rfind('/') + 1);
    if (tpu.name.empty()) continue;
    tpu.zone = zone;
    tpu.accelerator = text_field(node, "acceleratorType");
    tpu.state = text_field(node, "state");
    if (tpu.state == "READY") {
      PodConfig pod;
      pod.name = tpu.name;
      pod.gcloud = GcloudSpec{tpu.name, zone, board.project, board.internal_ip};
      pod.ssh = board.ssh;
      try {
        pod.workers = parse_gcloud_describe(node.dump(), board.internal_ip);
        tpu.pod = std::move(pod);
      } catch (const std::exception& e) {
        tpu.error = e.what();
      }
    }
    out.push_back(std::move(tpu));
  }
  return out;
}

std::vector<ListedTpu> list_board_tpus(const ConfigFile& config, ProcessRunner& runner) {
  std::vector<ListedTpu> out;
  if (!config.board_gcloud) return out;
  const BoardGcloud& board = *config.board_gcloud;
  for (const std::string& zone : board.zones) {
    const std::vector<std::string> argv = {"gcloud", "compute", "tpus",    "tpu-vm",          "list",
                                           "--project", board.project, "--zone", zone, "--format=json"};
    ProcessResult result = runner.run(argv);
    std::string error;
    if (result.exit_code == 127) {
      error = "cannot run gcloud; is the Google Cloud SDK installed and on PATH? (board.gcloud in the config)";
    } else if (result.exit_code != 0) {
      error = fmt::format("`gcloud compute tpus tpu-vm list --zone {}` failed: {}", zone, first_line(result.err));
    } else {
      try {
        for (ListedTpu& tpu : parse_tpu_list(result.out, zone, board)) {
          if (!in_config(config, tpu.name)) out.push_back(std::move(tpu));
        }
      } catch (const std::exception& e) {
        error = fmt::format("`gcloud compute tpus tpu-vm list --zone {}`: {}", zone, e.what());
      }
    }
    if (!error.empty()) out.push_back({"gcloud:" + zone, zone, "", "", std::nullopt, error});
  }
  return out;
}

CloudState board_cloud_state(const GcloudSpec& spec, const std::string& node_state, ProcessRunner& runner,
                             std::chrono::system_clock::time_point now) {
  CloudState cloud;
  const ProcessResult r = runner.run_bounded(gcloud_qr_describe_argv(spec), std::chrono::seconds(60), CancelToken());
  QueuedResource qr;
  try {
    if (r.exit_code != 0) {
      if (node_state == "NOT_FOUND" && is_not_found(r.err)) cloud.state = "no VM";
      return cloud;
    }
    qr = parse_queued_resource(r.out);
  } catch (const std::exception&) {
    return cloud;  // describe's own state stands
  }
  if (qr.state == "ACTIVE" && node_state != "NOT_FOUND") return cloud;  // the VM's state says more
  cloud.state = qr.state;
  cloud.detail = fmt::format(" (queued resource {})", qr.name);
  if (qr.state == "WAITING_FOR_RESOURCES" || qr.state == "ACCEPTED") {
    if (auto since = parse_utc_time(qr.create_time.substr(0, 19) + "Z")) {
      const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - *since).count();
      cloud.detail = fmt::format(" for {}{}", format_age(std::max<long long>(0, waited)), cloud.detail);
    }
  } else if (qr.state == "FAILED" && !qr.error.empty()) {
    cloud.detail += ": " + qr.error;
  } else if (qr.state == "SUSPENDED" || qr.state == "SUSPENDING") {
    cloud.detail += ": its VM was preempted; `tpurun down --yes` deletes it, `stage --recreate` makes it again";
  }
  return cloud;
}

}  // namespace tpurun
