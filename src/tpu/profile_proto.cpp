// ProfileRequest and ProfileResponse of tensorflow.ProfilerService
// (proto/profiler_service.proto, the project's own), by field number, with
// the hand-written reader that `top` uses (docs/profile.md says why not
// generated code). Test vectors come from the .proto through protoc.
#include <fmt/format.h>

#include "tpu/protobuf_wire.hpp"
#include "tpurun/tpu/profile.hpp"

namespace tpurun {
namespace {

// tsl's client asks for at most this many events (profiler_client.cc).
constexpr uint64_t kMaxEvents = 1000000;

std::string encode_options(const ProfileSettings& s) {
  std::string out;
  wire::put_uint(out, 2, s.host_tracer_level);
  wire::put_uint(out, 3, s.device_tracer_level);
  wire::put_uint(out, 4, s.python_tracer_level);
  wire::put_uint(out, 5, 1);  // version: 0 would make the server use its defaults
  wire::put_uint(out, 8, s.start_timestamp_ns);
  wire::put_uint(out, 9, s.duration_ms);
  return out;
}

}  // namespace

std::string encode_profile_request(const ProfileSettings& settings, std::string_view host_name) {
  std::string out;
  wire::put_uint(out, 1, settings.duration_ms);
  wire::put_uint(out, 2, kMaxEvents);
  wire::put_string(out, 3, "xplane.pb");
  wire::put_string(out, 4, encode_options(settings));
  if (!settings.repository_root.empty()) wire::put_string(out, 5, settings.repository_root);
  if (!settings.session_id.empty()) wire::put_string(out, 6, settings.session_id);
  if (!host_name.empty()) wire::put_string(out, 7, host_name);
  return out;
}

Result<ProfileResponse, std::string> decode_profile_response(std::string_view bytes) {
  ProfileResponse response;
  wire::Reader r(bytes);
  wire::Field f;
  while (r.next(f)) {
    if (f.number == 7 && f.type == wire::varint) {
      response.empty_trace = f.value != 0;
    } else if (f.number == 6 && f.type == wire::length_delimited) {
      wire::Reader tool(f.data);
      wire::Field t;
      std::string name;
      while (tool.next(t)) {
        if (t.number == 1 && t.type == wire::length_delimited) name = std::string(t.data);
      }
      if (!tool.error().empty()) return unexpected("ProfileToolData: " + tool.error());
      response.tool_data_names.push_back(name);
    }
  }
  if (!r.error().empty()) return unexpected("ProfileResponse: " + r.error());
  return response;
}

std::string trace_path(const ProfileSettings& settings, std::string_view host_name) {
  std::string file = fmt::format("{}.xplane.pb", host_name);
  for (char& c : file) {
    if (c == ':') c = '_';
  }
  std::string root = settings.repository_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return fmt::format("{}/{}/{}", root, settings.session_id, file);
}

std::string profile_host_name(const Worker& worker) {
  std::string name = worker.name();
  for (char& c : name) {
    if (c == ' ') c = '-';
  }
  return name;
}

}  // namespace tpurun
