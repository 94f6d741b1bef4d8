// stage's --env, --env-file and --env-from: what the job gets, and the
// errors for bad names, tpurun's own names and bad file lines.
#include "tpurun/runs/stage/job_env.hpp"

#include <gtest/gtest.h>

#include "fakes/system_fakes.hpp"
#include "fakes/temp_dir.hpp"
#include "tpurun/pod/worker_select.hpp"

namespace tpurun {
namespace {

using Env = std::map<std::string, std::string>;

std::string error_of(const JobEnvOptions& options, const Environment& env) {
  try {
    resolve_job_env(options, env);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(JobEnvTest, PairsKeepEverythingAfterTheFirstEquals) {
  testing::FakeEnvironment local;
  JobEnvOptions o;
  o.pairs = {"A=1", "B=x=y", "EMPTY="};
  EXPECT_EQ(resolve_job_env(o, local), (Env{{"A", "1"}, {"B", "x=y"}, {"EMPTY", ""}}));
}

TEST(JobEnvTest, RefusesTpurunsOwnNames) {
  testing::FakeEnvironment local;
  local.set("TPURUN_WORKER", "3");
  JobEnvOptions o;
  o.pairs = {"TPURUN_RUN_ID=x"};
  std::string error = error_of(o, local);
  EXPECT_NE(error.find("--env TPURUN_RUN_ID: TPURUN_RUN_ID is tpurun's own variable"), std::string::npos) << error;
  EXPECT_NE(error.find("kill --run"), std::string::npos) << error;
  o.pairs.clear();
  o.from = {"TPURUN_WORKER"};
  EXPECT_NE(error_of(o, local).find("--env-from TPURUN_WORKER: "), std::string::npos);
}

TEST(JobEnvTest, BadNamesAndMissingEqualsAreUsageErrorsWithoutTheValue) {
  testing::FakeEnvironment local;
  JobEnvOptions o;
  o.pairs = {"1X=secret"};
  std::string error = error_of(o, local);
  EXPECT_NE(error.find("starts with a digit"), std::string::npos) << error;
  EXPECT_EQ(error.find("secret"), std::string::npos) << error;
  o.pairs = {"A-B=secret"};
  EXPECT_NE(error_of(o, local).find("letters, digits and _ only"), std::string::npos);
  o.pairs = {"NOEQUALS"};
  EXPECT_NE(error_of(o, local).find("--env NOEQUALS: expected KEY=VALUE"), std::string::npos);
}

TEST(JobEnvTest, EnvFileSkipsCommentsAndBlanksAndNamesTheBadLine) {
  testing::TempDir tmp;
  const std::string file = tmp.write("job.env", "# a comment\n\nWANDB_MODE=offline\r\n  LR=0.1 # not a comment\n");
  testing::FakeEnvironment local;
  JobEnvOptions o;
  o.files = {file};
  EXPECT_EQ(resolve_job_env(o, local), (Env{{"LR", "0.1 # not a comment"}, {"WANDB_MODE", "offline"}}));

  const std::string bad = tmp.write("bad.env", "A=1\n\nTPURUN_RUN_ID=x\n");
  o.files = {bad};
  EXPECT_NE(error_of(o, local).find("--env-file " + bad + ":3: TPURUN_RUN_ID is tpurun's own"), std::string::npos)
      << error_of(o, local);
  o.files = {tmp.path() + "/missing.env"};
  EXPECT_NE(error_of(o, local).find("cannot read it"), std::string::npos);
}

TEST(JobEnvTest, EnvFromForwardsTheLocalValueAndNeedsItSet) {
  testing::FakeEnvironment local;
  local.set("WANDB_API_KEY", "s3cr3t");
  JobEnvOptions o;
  o.from = {"WANDB_API_KEY"};
  EXPECT_EQ(resolve_job_env(o, local), (Env{{"WANDB_API_KEY", "s3cr3t"}}));
  o.from = {"HF_TOKEN"};
  EXPECT_NE(error_of(o, local).find("--env-from HF_TOKEN: HF_TOKEN is not set here"), std::string::npos);
}

TEST(JobEnvTest, LaterSourcesWin) {
  testing::TempDir tmp;
  testing::FakeEnvironment local;
  local.set("A", "from-env");
  JobEnvOptions o;
  o.files = {tmp.write("f.env", "A=from-file\nB=from-file\nC=from-file\n")};
  o.from = {"A"};
  o.pairs = {"B=from-flag"};
  EXPECT_EQ(resolve_job_env(o, local), (Env{{"A", "from-env"}, {"B", "from-flag"}, {"C", "from-file"}}));
  EXPECT_EQ(env_names(resolve_job_env(o, local)), (std::vector<std::string>{"A", "B", "C"}));
}

}  // namespace
}  // namespace tpurun
