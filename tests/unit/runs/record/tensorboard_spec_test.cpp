// tpurun tensorboard's run names and --logdir_spec: named by tags, unique,
// and never holding the spec's separators.
#include <gmock/gmock.h>

#include <stdexcept>

#include "tpurun/runs/record/tensorboard_spec.hpp"

namespace tpurun {
namespace {

using ::testing::ElementsAre;

RunRecord run(const std::string& id, std::vector<std::string> tags = {}) {
  RunRecord r;
  r.run_id = id;
  r.tags = std::move(tags);
  return r;
}

TEST(TensorBoardSpec, NamesARunByItsTags) {
  EXPECT_EQ(tensorboard_base_name(run("20240419_020919_nevsyj_sim_b1024_lr0.1", {"b1024", "lr=0.1"})),
            "b1024_lr0.1");
}

TEST(TensorBoardSpec, UntaggedRunsAreNamedByTheirId) {
  EXPECT_EQ(tensorboard_base_name(run("20240419_020919_nevsyj_sim")), "20240419_020919_nevsyj_sim");
}

TEST(TensorBoardSpec, SeparatorsNeverReachTheName) {
  std::string name = tensorboard_base_name(run("x", {"a,b", "c:d", "e f/g"}));
  EXPECT_EQ(name, "a-b_c-d_e-f-g");
  EXPECT_EQ(tensorboard_base_name(run("2024:01,x")), "2024-01-x");
}

TEST(TensorBoardSpec, SharedTagsGetTheRunsRandomPart) {
  auto names = tensorboard_names({run("20240419_020919_aaaaaa_sim_b1024", {"b1024"}),
                                  run("20240419_030919_bbbbbb_sim_b1024", {"b1024"}),
                                  run("20240419_040919_cccccc_sim_b2048", {"b2048"})});
  EXPECT_THAT(names, ElementsAre("b1024_aaaaaa", "b1024_bbbbbb", "b2048"));
}

TEST(TensorBoardSpec, NamesStayUniqueWhenSuffixesCollide) {
  // Two of the three runs share their random part too.
  auto names = tensorboard_names({run("1_2_x_p", {"b"}), run("1_2_x_q", {"b"}), run("1_3_y_p", {"b"})});
  EXPECT_THAT(names, ElementsAre("b_x", "b_x_2", "b_y"));
}

TEST(TensorBoardSpec, SpecJoinsNameAndPath) {
  EXPECT_EQ(logdir_spec({{"id1", "b1024", "/nfs/logs/a"}, {"id2", "b2048", "/nfs/logs/b:c"}}),
            "b1024:/nfs/logs/a,b2048:/nfs/logs/b:c");
}

TEST(TensorBoardSpec, RefusesPathsWithACommaAndBadNames) {
  EXPECT_THROW(logdir_spec({{"id1", "b", "/nfs/a,b"}}), std::invalid_argument);
  EXPECT_THROW(logdir_spec({{"id1", "a:b", "/nfs/a"}}), std::invalid_argument);
  EXPECT_THROW(logdir_spec({{"id1", "", "/nfs/a"}}), std::invalid_argument);
}

}  // namespace
}  // namespace tpurun
