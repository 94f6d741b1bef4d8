#include "tpurun/pod/worker_select.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tpurun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string selection_error(const std::string& spec, int count) {
  try {
    parse_worker_selection(spec, count);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(WorkerSelectionTest, AllMeansEveryWorker) {
  EXPECT_THAT(parse_worker_selection("all", 4), ElementsAre(0, 1, 2, 3));
}

TEST(WorkerSelectionTest, SingleIndex) {
  EXPECT_THAT(parse_worker_selection("3", 4), ElementsAre(3));
  EXPECT_THAT(parse_worker_selection("0", 1), ElementsAre(0));
}

TEST(WorkerSelectionTest, ListAndRangeMixed) {
  EXPECT_THAT(parse_worker_selection("1,4,6", 8), ElementsAre(1, 4, 6));
  EXPECT_THAT(parse_worker_selection("1-3", 8), ElementsAre(1, 2, 3));
  EXPECT_THAT(parse_worker_selection("0,2-4,7", 8), ElementsAre(0, 2, 3, 4, 7));
}

TEST(WorkerSelectionTest, ResultIsSortedAndDeduplicated) {
  EXPECT_THAT(parse_worker_selection("5,1-3,2,1", 8), ElementsAre(1, 2, 3, 5));
  EXPECT_THAT(parse_worker_selection("all,2", 3), ElementsAre(0, 1, 2));
}

TEST(WorkerSelectionTest, SpacesAroundItemsAreTolerated) {
  EXPECT_THAT(parse_worker_selection(" 1 , 2 - 3 ", 8), ElementsAre(1, 2, 3));
}

TEST(WorkerSelectionTest, OutOfRangeNamesTheWorkerAndTheValidRange) {
  EXPECT_EQ(selection_error("0,9", 8),
            "bad worker selection '0,9': worker 9 is out of range (valid workers: 0..7)");
  EXPECT_THAT(selection_error("2-8", 8),
              HasSubstr("worker 8 is out of range (valid workers: 0..7)"));
}

TEST(WorkerSelectionTest, RejectsNegativeIndices) {
  EXPECT_EQ(
      selection_error("-1", 8),
      "bad worker selection '-1': '-1': worker indices cannot be negative (valid workers: 0..7)");
}

TEST(WorkerSelectionTest, RejectsReversedRanges) {
  EXPECT_THAT(selection_error("3-1", 8), HasSubstr("'3-1': reversed range; write 1-3"));
}

TEST(WorkerSelectionTest, RejectsJunkNamingTheBadToken) {
  EXPECT_THAT(selection_error("1,x", 8),
              HasSubstr("'x' is not a worker index, a range N-M or 'all'"));
  EXPECT_THAT(selection_error("1-", 8), HasSubstr("'1-' is not a worker index"));
  EXPECT_THAT(selection_error("+1", 8), HasSubstr("'+1' is not"));
  EXPECT_THAT(selection_error("1-2-3", 8), HasSubstr("'1-2-3' is not"));
  EXPECT_THAT(selection_error("ALL", 8), HasSubstr("'ALL' is not"));
  EXPECT_THAT(selection_error("99999999999", 8), HasSubstr("'99999999999' is not"));
}

TEST(WorkerSelectionTest, RejectsEmptySelectionsAndItems) {
  EXPECT_THAT(selection_error("", 8), HasSubstr("empty worker selection"));
  EXPECT_THAT(selection_error("  ", 8), HasSubstr("empty worker selection"));
  EXPECT_THAT(selection_error("1,,2", 8), HasSubstr("empty item"));
  EXPECT_THAT(selection_error("1,", 8), HasSubstr("empty item"));
}

TEST(WorkerSelectionTest, PodWithoutWorkersRejectsEverything) {
  EXPECT_EQ(selection_error("all", 0), "bad worker selection 'all': the pod has no workers");
}

}  // namespace
}  // namespace tpurun
