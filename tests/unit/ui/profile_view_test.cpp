// tpurun profile's lines: the trace and its size, or why not and what to do.
#include "tpurun/ui/profile_view.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

ProfileReport report() {
  ProfileReport r;
  r.run_id = "RUN";
  r.port = 9999;
  r.settings.repository_root = "/logs/RUN/plugins/profile";
  r.settings.session_id = "S";
  r.settings.duration_ms = 2000;
  r.settings.start_timestamp_ns = 5;
  r.workers = {
      {{0, "10.0.0.1", 22}, "w0", TraceWritten{"/logs/RUN/plugins/profile/S/w0.xplane.pb", 14540, false, ""}},
      {{1, "10.0.0.2", 22}, "w1", NoProfilerServer{""}},
      {{2, "10.0.0.3", 22}, "w2", NotThisRunsServer{"bob's process"}},
      {{3, "10.0.0.4", 22}, "w3", ProfileFailed{"INTERNAL: Another profiling session active.", std::nullopt,
                                               GrpcCode::internal}},
      {{4, "10.0.0.5", 22}, "w4", ProfileTimedOut{32300}},
      {{5, "10.0.0.6", 22}, "w5", TraceWritten{"/x/w5.xplane.pb", std::nullopt, true, "not seen here"}},
  };
  return r;
}

TEST(ProfileViewTest, OneLinePerWorkerSayingWhatToDo) {
  const std::string text = format_profile_report(report());
  EXPECT_NE(text.find("w0 10.0.0.1  trace written, 14.2 KiB: /logs/RUN/plugins/profile/S/w0.xplane.pb\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("w1 10.0.0.2  no profiler server on port 9999: the job must start one, e.g. with "
                      "jax.profiler.start_server(9999)\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("w2 10.0.0.3  not asked: port 9999 is served by bob's process, not by this run's job\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("w3 10.0.0.4  the call failed: INTERNAL: Another profiling session active.\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("w4 10.0.0.5  timed out: no answer after 32.3s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("w5 10.0.0.6  trace written, size unknown (no events): /x/w5.xplane.pb (not seen here)\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("2 of 6 workers traced (2s each) into session S of run RUN: /logs/RUN/plugins/profile/S\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("tpurun tensorboard RUN"), std::string::npos) << text;
}

TEST(ProfileViewTest, Json) {
  nlohmann::json doc = profile_report_to_json(report());
  EXPECT_EQ(doc["session_id"], "S");
  EXPECT_EQ(doc["start_timestamp_ns"], 5);
  ASSERT_EQ(doc["workers"].size(), 6u);
  EXPECT_EQ(doc["workers"][0]["outcome"], "written");
  EXPECT_EQ(doc["workers"][0]["bytes"], 14540);
  EXPECT_EQ(doc["workers"][0]["host_name"], "w0");
  EXPECT_EQ(doc["workers"][1]["outcome"], "no_server");
  EXPECT_EQ(doc["workers"][2]["outcome"], "not_this_run");
  EXPECT_EQ(doc["workers"][3]["outcome"], "failed");
  EXPECT_EQ(doc["workers"][4]["outcome"], "timed_out");
  EXPECT_TRUE(doc["workers"][5]["bytes"].is_null());
}

}  // namespace
}  // namespace tpurun
