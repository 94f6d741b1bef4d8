// run.json keeps the job's variable names, never their values, and still
// reads the run.json of older tpurun versions that stored `env` with values.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fakes/temp_dir.hpp"
#include "tpurun/runs/record/run_record.hpp"

namespace tpurun {
namespace {

TEST(RunRecordEnvTest, WritesNamesOnly) {
  testing::TempDir tmp;
  RunRecord r;
  r.run_id = "20250101_000000_abcdef_sim";
  r.user = "alice";
  r.pod = "sim";
  r.command = {"python3", "main.py"};
  r.env_names = {"WANDB_API_KEY"};
  r.log_dir = tmp.path();
  write_run_record(r, "");
  std::ifstream in(tmp.path() + "/run.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"env_names\""), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("\"env\":"), std::string::npos) << text.str();
  EXPECT_EQ(read_run_record(tmp.path()).env_names, std::vector<std::string>{"WANDB_API_KEY"});
}

TEST(RunRecordEnvTest, ReadsTheNamesOfAnOldEnvMap) {
  testing::TempDir tmp;
  tmp.write("run.json", R"({"run_id": "r", "user": "alice", "pod": "sim", "workers": [], "command": ["x"],
                            "env": {"A": "1", "B": "2"}})");
  EXPECT_EQ(read_run_record(tmp.path()).env_names, (std::vector<std::string>{"A", "B"}));
}

}  // namespace
}  // namespace tpurun
