// Multi-slice pods in the config ("slices": [...]) and as --pod A,B: what they
// resolve to, and every mistake reported at file:line or naming the flag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/system_fakes.hpp"
#include "fakes/temp_dir.hpp"
#include "pod/config_schema_fixture.hpp"
#include "pod/gcloud_fixtures.hpp"
#include "tpurun/pod/slices.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;
using MultisliceConfigTest = tpurun::testing::ConfigSchemaTest;

// Pods a (2 workers) and b (3 workers) on lines 3 and 4; `more` goes on line 5.
std::string with_slices(const std::string& more, const std::string& b_logs = "/l") {
  return "{\"pods\": {\n"
         "\n"
         "\"a\": {\"workers\": [\"10.0.0.1\", \"10.0.0.2\"], \"staging_root\": \"/s\", \"logs_root\": \"/l\"},\n"
         "\"b\": {\"workers\": [\"10.0.1.1\", \"10.0.1.2\", \"10.0.1.3\"], \"staging_root\": \"/s\", "
         "\"logs_root\": \"" + b_logs + "\"}" +
         (more.empty() ? "" : ",\n" + more) + "\n}}\n";
}

TEST_F(MultisliceConfigTest, ASlicesPodTakesItsSettingsFromItsSlices) {
  ConfigFile config = parse(with_slices("\"ab\": {\"slices\": [\"a\", \"b\"], \"megascale_port\": 9090}"));
  const PodConfig& ab = config.pods.at("ab");
  ASSERT_EQ(ab.slices.size(), 2u);
  EXPECT_EQ(ab.slices[0].pod, "a");
  EXPECT_EQ(ab.slices[1].pod, "b");
  EXPECT_EQ(ab.staging_root, "/s");
  EXPECT_EQ(ab.logs_root, "/l");
  EXPECT_EQ(ab.megascale_port, 9090);
  EXPECT_EQ(config.pods.at("a").megascale_port, kDefaultMegascalePort);
  EXPECT_EQ(config.order, (std::vector<std::string>{"a", "b", "ab"}));
}

TEST_F(MultisliceConfigTest, UnknownSliceGetsDidYouMeanAtItsLine) {
  EXPECT_THAT(error(with_slices("\"ab\": {\"slices\": [\"a\",\n \"bx\"]}")),
              HasSubstr("tpurun.json:6: pods.ab.slices[1]: no pod named 'bx' (did you mean 'b'?); pods: a, ab, b"));
}

TEST_F(MultisliceConfigTest, ASliceListedTwiceIsAnError) {
  EXPECT_THAT(error(with_slices("\"ab\": {\"slices\": [\"a\", \"b\", \"a\"]}")),
              HasSubstr("tpurun.json:5: pods.ab.slices[2]: slice 'a' is listed twice"));
}

TEST_F(MultisliceConfigTest, NestedSlicesAreAnErrorWhateverTheOrder) {
  // the nested pod before and after the one it names
  EXPECT_THAT(error(with_slices("\"abc\": {\"slices\": [\"ab\", \"a\"]},\n\"ab\": {\"slices\": [\"a\", \"b\"]}")),
              HasSubstr("tpurun.json:5: pods.abc.slices[0]: 'ab' is itself made of slices; list its slices (a, b) "
                        "instead"));
  EXPECT_THAT(error(with_slices("\"ab\": {\"slices\": [\"a\", \"b\"]},\n\"abc\": {\"slices\": [\"ab\", \"a\"]}")),
              HasSubstr("tpurun.json:6: pods.abc.slices[0]: 'ab' is itself made of slices"));
}

TEST_F(MultisliceConfigTest, SlicesMustShareTheirRoots) {
  EXPECT_THAT(error(with_slices("\"ab\": {\"slices\": [\"a\", \"b\"]}", "/other")),
              HasSubstr("tpurun.json:5: pods.ab.slices[1]: slices 'a' and 'b' have different logs_root (/l and "
                        "/other)"));
}

TEST_F(MultisliceConfigTest, OneSliceIsNotAMultiSlicePod) {
  EXPECT_THAT(error(with_slices("\"ab\": {\"slices\": [\"a\"]}")),
              HasSubstr("tpurun.json:5: pods.ab.slices: list at least two slices"));
}

TEST_F(MultisliceConfigTest, ASlicesPodHasNoWorkersOfItsOwn) {
  EXPECT_THAT(error(with_slices("\"ab\": {\"slices\": [\"a\", \"b\"],\n \"workers\": [\"10.0.0.9\"]}")),
              HasSubstr("tpurun.json:6: pods.ab.workers: not allowed here: a pod with \"slices\" takes its workers"));
}

TEST_F(MultisliceConfigTest, MegascalePortIsChecked) {
  EXPECT_THAT(error(with_slices("\"ab\": {\"slices\": [\"a\", \"b\"], \"megascale_port\": 70000}")),
              HasSubstr("tpurun.json:5: pods.ab.megascale_port: must be a port number from 1 to 65535"));
  EXPECT_THAT(error(pod_with("      \"megascale_port\": 8081,\n")),
              HasSubstr("tpurun.json:4: pods.sim.megascale_port: megascale_port is for a multi-slice pod"));
}

class MultisliceLoadTest : public ::testing::Test {
 protected:
  MultisliceLoadTest()
      : cwd_(temp_.path()), env_(std::map<std::string, std::string>{{"HOME", temp_.path()}, {"USER", "alice"}}) {}

  PodConfig load(const std::string& pod) { return load_pod(PodRequest{std::nullopt, pod, {}}, env_, runner_); }
  std::string load_error(const std::string& pod) {
    try {
      load(pod);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(no error)";
  }

  testing::TempDir temp_;
  testing::ScopedChdir cwd_;
  testing::FakeEnvironment env_;
  testing::FakeProcessRunner runner_;
};

TEST_F(MultisliceLoadTest, PodListJoinsTheSlicesWorkersSliceBySlice) {
  temp_.write("tpurun.json", with_slices(""));
  PodConfig pod = load("b,a");
  EXPECT_EQ(pod.name, "b,a");
  ASSERT_EQ(pod.workers.size(), 5u);
  std::vector<std::string> seen;
  for (const Worker& w : pod.workers) seen.push_back(w.display());
  EXPECT_EQ(seen, (std::vector<std::string>{"w0 s0w0 10.0.1.1", "w1 s0w1 10.0.1.2", "w2 s0w2 10.0.1.3",
                                            "w3 s1w0 10.0.0.1", "w4 s1w1 10.0.0.2"}));
  EXPECT_EQ(pod.slices[1].pod, "a");
  EXPECT_EQ(pod.slices[1].first_worker, 3);
  EXPECT_EQ(pod.slices[1].num_workers, 2);
  EXPECT_EQ(pod.megascale_port, kDefaultMegascalePort);
  EXPECT_EQ(pod.logs_root, "/l");
}

TEST_F(MultisliceLoadTest, ConfigSlicesPodLoadsLikeTheList) {
  temp_.write("tpurun.json", with_slices("\"ab\": {\"slices\": [\"a\", \"b\"], \"megascale_port\": 8476}"));
  PodConfig pod = load("ab");
  ASSERT_EQ(pod.workers.size(), 5u);
  EXPECT_EQ(pod.workers[4].slice, 1);
  EXPECT_EQ(pod.workers[4].slice_worker, 2);
  EXPECT_EQ(pod.megascale_port, 8476);
}

TEST_F(MultisliceLoadTest, PodListErrorsNameTheFlag) {
  temp_.write("tpurun.json", with_slices("\"ab\": {\"slices\": [\"a\", \"b\"]}"));
  EXPECT_THAT(load_error("a,bx"), HasSubstr("--pod a,bx: no pod named 'bx' (did you mean 'b'?)"));
  EXPECT_THAT(load_error("a,a"), HasSubstr("--pod a,a: slice 'a' is listed twice"));
  EXPECT_THAT(load_error("a,"), HasSubstr("--pod a,: slice 1 has no name"));
  EXPECT_THAT(load_error("ab,a"), HasSubstr("--pod ab,a: 'ab' is itself made of slices"));
}

TEST_F(MultisliceLoadTest, PodListChecksTheRootsToo) {
  temp_.write("tpurun.json", with_slices("", "/other"));
  EXPECT_THAT(load_error("a,b"), HasSubstr("--pod a,b: slices 'a' and 'b' have different logs_root"));
}

TEST_F(MultisliceLoadTest, AHostInTwoSlicesIsAnError) {
  temp_.write("tpurun.json",
              "{\"pods\": {\"a\": {\"workers\": [\"10.0.0.1\"], \"staging_root\": \"/s\", \"logs_root\": \"/l\"},"
              "\"c\": {\"workers\": [\"10.0.0.5\", \"10.0.0.1\"], \"staging_root\": \"/s\", \"logs_root\": \"/l\"}}}");
  EXPECT_THAT(load_error("a,c"), HasSubstr("w0 s0w0 of slice 'a' and w2 s1w1 of slice 'c' are the same host 10.0.0.1"));
}

TEST_F(MultisliceLoadTest, GcloudSlicesAreEachDescribed) {
  temp_.write("tpurun.json",
              "{\"pods\": {\"g1\": {\"gcloud\": {\"name\": \"tpu-1\", \"zone\": \"z\"}, \"staging_root\": \"/s\", "
              "\"logs_root\": \"/l\"}, \"g2\": {\"gcloud\": {\"name\": \"tpu-2\", \"zone\": \"z\"}, "
              "\"staging_root\": \"/s\", \"logs_root\": \"/l\"}}}");
  runner_.next = {0, testing::kDescribeV4_32, ""};
  // the fake describes both TPU VMs with the same hosts, which is an error,
  // but only once both were asked
  EXPECT_THAT(load_error("g1,g2"), HasSubstr("are the same host"));
  ASSERT_EQ(runner_.calls.size(), 2u);
  EXPECT_THAT(runner_.calls[0].argv, ::testing::Contains("tpu-1"));
  EXPECT_THAT(runner_.calls[1].argv, ::testing::Contains("tpu-2"));
}

}  // namespace
}  // namespace tpurun
