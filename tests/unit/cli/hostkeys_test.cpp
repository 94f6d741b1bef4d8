// tpurun hostkeys --import: the gcloud command that records the keys.
#include "cli/hostkeys.hpp"

#include <gtest/gtest.h>

namespace tpurun::cli {
namespace {

TEST(HostKeysTest, ImportRunsGcloudTpuVmSshOnTheSelectedWorkers) {
  GcloudSpec spec{"v4-32", "us-central2-b", "", true};
  EXPECT_EQ(gcloud_import_argv(spec, "all"),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "tpu-vm", "ssh", "v4-32", "--zone", "us-central2-b",
                                      "--worker=all", "--command=true"}));
  spec.project = "p";
  auto argv = gcloud_import_argv(spec, "0-3");
  EXPECT_EQ(argv[8], "--project");
  EXPECT_EQ(argv[9], "p");
  EXPECT_EQ(argv[10], "--worker=0-3");
}

}  // namespace
}  // namespace tpurun::cli
