// doctor's report: where each problem is, its fix indented under it, the count.
#include "tpurun/ui/doctor_view.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

TEST(DoctorViewTest, EachProblemWithWhereAndItsFixThenTheCount) {
  const std::vector<Finding> findings{
      {Finding::Severity::error, "uid", {0, 1, 2}, "uid 1001 here, 1002 there", "usermod -u 1001 alice\nthen log in again"},
      {Finding::Severity::warning, "gcloud", {}, "no gcloud account", ""}};
  EXPECT_EQ(format_doctor_report("v4-32", 4, findings),
            "doctor: pod 'v4-32', 4 workers\n"
            "error   w[0-2]: uid 1001 here, 1002 there\n"
            "        fix: usermod -u 1001 alice\n"
            "        then log in again\n"
            "warning here: no gcloud account\n"
            "1 error, 1 warning\n");
  EXPECT_EQ(error_count(findings), 1u);
  const nlohmann::json doc = findings_to_json("v4-32", 4, findings);
  EXPECT_FALSE(doc["ok"]);
  EXPECT_EQ(doc["problems"][0]["workers"], nlohmann::json({0, 1, 2}));
}

TEST(DoctorViewTest, NoProblemsSaysWhatWasChecked) {
  const std::string text = format_doctor_report("local", 1, {});
  EXPECT_EQ(text.substr(0, text.find('\n')), "doctor: pod 'local', 1 worker");
  EXPECT_NE(text.find("no problems found"), std::string::npos);
  EXPECT_TRUE(findings_to_json("local", 1, {})["ok"]);
}

}  // namespace
}  // namespace tpurun
