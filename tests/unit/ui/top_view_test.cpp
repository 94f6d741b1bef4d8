#include "tpurun/ui/top_view.hpp"

#include <gtest/gtest.h>

#include "../tpu/scan_fixtures.hpp"

namespace tpurun {
namespace {

using testing::kBobHoldsEverything;

ChipFigures chip(int id, double duty, double used_gib) {
  return {id, static_cast<int64_t>(used_gib * (1LL << 30)), 32LL << 30, duty};
}

std::vector<WorkerLook> pod() {
  const LockScan bob = *parse_scan(kBobHoldsEverything);
  std::vector<WorkerLook> looks;
  looks.push_back({{Worker{0, "10.0.0.1", 22}, TpuState::busy_other, bob, ""},
                   TpuMetricsOutcome{TpuFigures{{chip(0, 87.5, 19.7), chip(1, 87.5, 19.8)}, {}}}});
  looks.push_back({{Worker{1, "10.0.0.2", 22}, TpuState::busy_other, bob, ""},
                   TpuMetricsOutcome{TpuFigures{{chip(0, 0, 19.7), {1, std::nullopt, std::nullopt, std::nullopt}},
                                                {"duty cycle: NOT_FOUND: no such metric"}}}});
  looks.push_back({{Worker{2, "10.0.0.3", 22}, TpuState::free, testing::empty_scan(), ""},
                   TpuMetricsOutcome{NoTpuWorkload{"refused"}}});
  looks.push_back({{Worker{3, "10.0.0.4", 22}, TpuState::unreachable, std::nullopt, "connect timed out after 5s"},
                   std::nullopt});
  looks.push_back({{Worker{4, "10.0.0.5", 22}, TpuState::busy_other, bob, ""},
                   TpuMetricsOutcome{MetricsFailure{"libtpu's metrics service: HBM usage: UNAVAILABLE: shutting down",
                                                    std::nullopt, GrpcCode::unavailable}}});
  return looks;
}

TEST(TopViewTest, SummaryLine) {
  EXPECT_EQ(format_top_summary("v4-32", summarize_top(pod())),
            "v4-32: duty cycle mean 58.3%, min 0.0% on w1 (10.0.0.2) · HBM 59.2 of 96.0 GiB · 2 of 5 workers "
            "with a TPU workload · 2 failed");
}

TEST(TopViewTest, RowsPerWorkerAndChipWithTheHolderOnTheFirst) {
  const std::vector<std::string> rows = format_top_rows(pod());
  const std::vector<std::string> expected = {
      "WORKER CHIP    DUTY  HBM USED/TOTAL     HOLDER",
      "w0        0   87.5%  19.7/32.0 GiB      bob 406 [run 20250101-run-b] python3 train.py --forev...",
      "          1   87.5%  19.8/32.0 GiB",
      "w1        0    0.0%  19.7/32.0 GiB      bob 406 [run 20250101-run-b] python3 train.py --forev...",
      "          1       -  -",
      "                                        note: duty cycle: NOT_FOUND: no such metric",
      "w2        -          no TPU workload    free",
      "w3        -          unreachable: connect timed out after 5s",
      "w4        -          error: libtpu's metrics service: HBM usage: UNAVAILABLE: ...  bob 406 [run "
      "20250101-run-b] python3 train.py --forev...",
  };
  EXPECT_EQ(rows, expected);
}

TEST(TopViewTest, Json) {
  nlohmann::json j = top_to_json("v4-32", pod());
  EXPECT_EQ(j["pod"], "v4-32");
  EXPECT_EQ(j["summary"]["with_figures"], 2);
  EXPECT_EQ(j["summary"]["least_busy_worker"], 1);
  EXPECT_EQ(j["workers"][0]["metrics"], "figures");
  EXPECT_EQ(j["workers"][0]["chips"][0]["duty_cycle_pct"], 87.5);
  EXPECT_EQ(j["workers"][0]["holders"][0]["user"], "bob");
  EXPECT_TRUE(j["workers"][1]["chips"][1]["duty_cycle_pct"].is_null());
  EXPECT_EQ(j["workers"][1]["notes"][0], "duty cycle: NOT_FOUND: no such metric");
  EXPECT_EQ(j["workers"][2]["metrics"], "no_workload");
  EXPECT_TRUE(j["workers"][3]["metrics"].is_null());
  EXPECT_EQ(j["workers"][3]["state"], "unreachable");
  EXPECT_EQ(j["workers"][3]["error"], "connect timed out after 5s");
  EXPECT_EQ(j["workers"][4]["metrics"], "error");
  EXPECT_EQ(j["workers"][4]["metrics_error"]["grpc_status"], "UNAVAILABLE");
}

}  // namespace
}  // namespace tpurun
