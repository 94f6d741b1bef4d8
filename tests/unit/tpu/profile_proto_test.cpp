// The Profile call's messages against bytes the real protobuf runtime made
// from the project's own proto/profiler_service.proto
// (profiler_vectors/make_vectors.py; NAME.txt beside each NAME.bin).
#include <gtest/gtest.h>

#include "tpurun/tpu/profile.hpp"
#include "vector_files.hpp"

namespace tpurun {
namespace {

std::string vector_bytes(const std::string& name) { return testing::vector_bytes("profiler_vectors", name); }

ProfileSettings vector_settings() {
  ProfileSettings s;
  s.repository_root = "/nfs/logs/run1/plugins/profile";
  s.session_id = "2025_11_24_16_00_00";
  s.start_timestamp_ns = 1764000000123456789ULL;
  s.duration_ms = 2000;
  return s;  // tsl's default levels: host 2, device 1, python 0
}

TEST(ProfileProtoTest, RequestIsByteForByteWhatProtobufWrites) {
  EXPECT_EQ(encode_profile_request(vector_settings(), "w3"), vector_bytes("request_tpurun"));
}

TEST(ProfileProtoTest, LevelsAtZeroAreLeftOutAsProto3Does) {
  ProfileSettings s = vector_settings();
  s.device_tracer_level = 0;
  const std::string off = encode_profile_request(s, "w3");
  EXPECT_EQ(off.size() + 2, vector_bytes("request_tpurun").size());
}

TEST(ProfileProtoTest, ResponsesDecode) {
  auto trace = decode_profile_response(vector_bytes("response_trace"));
  ASSERT_TRUE(trace.ok());
  EXPECT_FALSE(trace->empty_trace);
  auto empty = decode_profile_response(vector_bytes("response_empty_trace"));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty_trace);
  auto tools = decode_profile_response(vector_bytes("response_tool_data"));
  ASSERT_TRUE(tools.ok());
  EXPECT_EQ(tools->tool_data_names, std::vector<std::string>{"trace.json.gz"});
}

TEST(ProfileProtoTest, MalformedResponseSaysWhat) {
  auto bad = decode_profile_response(std::string("\x38", 1));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("ProfileResponse"), std::string::npos) << bad.error();
}

TEST(ProfileProtoTest, TracePathIsTheServersLayout) {
  ProfileSettings s = vector_settings();
  EXPECT_EQ(trace_path(s, "w3"), "/nfs/logs/run1/plugins/profile/2025_11_24_16_00_00/w3.xplane.pb");
  s.repository_root += "/";
  EXPECT_EQ(trace_path(s, "10.0.0.2:9999"), "/nfs/logs/run1/plugins/profile/2025_11_24_16_00_00/10.0.0.2_9999.xplane.pb");
}

TEST(ProfileProtoTest, HostNamesSayTheWorkerAndItsSlice) {
  Worker w{3, "10.0.0.4", 22};
  EXPECT_EQ(profile_host_name(w), "w3");
  w.slice = 1;
  w.slice_worker = 1;
  w.index = 5;
  EXPECT_EQ(profile_host_name(w), "w5-s1w1");
}

}  // namespace
}  // namespace tpurun
