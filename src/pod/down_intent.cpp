#include "tpurun/pod/down_intent.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tpurun/pod/placement.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::system_clock;

long long ms_of(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string text_of(const nlohmann::json& doc, const char* key) {
  return doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>() : "";
}

}  // namespace

std::string down_intent_path(const GcloudSpec& spec, const Environment& env) {
  // The placement's file name: one per TPU VM name and project.
  return state_dir(env) + "/down/" + std::filesystem::path(placement_path(spec, env)).filename().string();
}

void write_down_intent(const std::string& path, const DownIntent& intent) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const nlohmann::json doc = {{"at", format_utc_time(intent.at)}, {"at_ms", ms_of(intent.at)},
                              {"tpu", intent.tpu},                {"zone", intent.zone},
                              {"project", intent.project},        {"pod", intent.pod},
                              {"host", intent.host},              {"pid", intent.pid}};
  write_file_atomic(path, doc.dump(2) + "\n");
}

std::optional<DownIntent> read_down_intent(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0) return std::nullopt;  // the usual case, without an exception
  std::string text;
  try {
    text = read_small_file(path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("at_ms") || !doc["at_ms"].is_number_integer()) {
    return std::nullopt;
  }
  DownIntent intent;
  intent.at = Clock::time_point(std::chrono::milliseconds(doc["at_ms"].get<long long>()));
  intent.tpu = text_of(doc, "tpu");
  intent.zone = text_of(doc, "zone");
  intent.project = text_of(doc, "project");
  intent.pod = text_of(doc, "pod");
  intent.host = text_of(doc, "host");
  if (doc.contains("pid") && doc["pid"].is_number_integer()) intent.pid = doc["pid"].get<int>();
  return intent;
}

bool down_intent_applies(const DownIntent& intent, Clock::time_point started) { return intent.at >= started; }

std::optional<DownIntent> down_intent_since(const std::string& path, Clock::time_point started) {
  if (path.empty()) return std::nullopt;
  auto intent = read_down_intent(path);
  if (!intent || !down_intent_applies(*intent, started)) return std::nullopt;
  return intent;
}

std::string down_intent_text(const DownIntent& intent) {
  std::string who = format_utc_time(intent.at);
  if (intent.pid > 0) who += fmt::format(", pid {}", intent.pid);
  if (!intent.host.empty()) who += " on " + intent.host;
  return fmt::format("`tpurun down` ({}) asked for TPU VM {} to be deleted", who, intent.tpu);
}

DownIntentWatch::DownIntentWatch(std::string path, Clock::time_point started, std::chrono::milliseconds every)
    : path_(std::move(path)), started_(started), every_(every) {
  if (!path_.empty()) thread_ = std::thread([this] { look(); });
}

DownIntentWatch::~DownIntentWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  done_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<DownIntent> DownIntentWatch::seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_;
}

void DownIntentWatch::look() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!done_) {
    lock.unlock();
    auto intent = down_intent_since(path_, started_);
    lock.lock();
    if (intent) {
      seen_ = std::move(intent);
      found_ = true;
      return;
    }
    done_cv_.wait_for(lock, every_, [this] { return done_; });
  }
}

}  // namespace tpurun
