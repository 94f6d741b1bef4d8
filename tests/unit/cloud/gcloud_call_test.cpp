// gcloud_call: which gcloud failures are worth the same call again.
#include "tpurun/cloud/gcloud_call.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

ProcessResult failed(const std::string& err, int code = 1) { return ProcessResult{code, "", err}; }

TEST(GcloudCallTest, RateLimitsServerErrorsAndTimeoutsAreTransient) {
  EXPECT_TRUE(is_transient(failed("ERROR: (gcloud.compute.tpus.queued-resources.describe) HTTPError 429: Quota "
                                  "exceeded for quota metric 'Read requests'")));
  EXPECT_TRUE(is_transient(failed("ERROR: (gcloud.compute.tpus.queued-resources.describe) HTTPError 503: The "
                                  "service is currently unavailable.")));
  EXPECT_TRUE(is_transient(failed("ERROR: gcloud crashed (ConnectionError): HTTPConnectionPool(host='127.0.0.1', "
                                  "port=1): Max retries exceeded with url")));
  ProcessResult timed_out = failed("tpurun: gave up after 120s\n", 124);
  timed_out.timed_out = true;
  EXPECT_TRUE(is_transient(timed_out));
}

TEST(GcloudCallTest, RefusalsAndMissingThingsAreNot) {
  EXPECT_FALSE(is_transient(failed("ERROR: (gcloud.compute.tpus.queued-resources.describe) NOT_FOUND: Resource "
                                   "'projects/p/locations/z/queuedResources/q' was not found")));
  EXPECT_FALSE(is_transient(failed("ERROR: (gcloud) PERMISSION_DENIED: Permission 'tpu.queuedResources.get' denied")));
  EXPECT_FALSE(is_transient(failed("ERROR: (gcloud) INVALID_ARGUMENT: bad zone")));
  EXPECT_FALSE(is_transient(ProcessResult{0, "{}", ""}));
}

}  // namespace
}  // namespace tpurun
