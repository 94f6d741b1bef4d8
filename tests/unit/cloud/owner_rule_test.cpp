// owner_rule: what `up` may do with a queued resource it meets.
#include "cloud/owner_rule.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

QueuedResource qr(const std::string& state, const std::string& owner) {
  QueuedResource q;
  q.name = "v4-16";
  q.state = state;
  if (!owner.empty()) q.labels["tpurun-user"] = owner;
  return q;
}

TEST(OwnerRuleTest, AnotherUsersQueuedResourceIsNeverWaitedOnNorDeleted) {
  for (const char* state : {"WAITING_FOR_RESOURCES", "PROVISIONING", "ACTIVE", "FAILED", "SUSPENDED"}) {
    EXPECT_EQ(on_found(qr(state, "alice"), "bob"), FoundAction::refuse) << state;
  }
}

TEST(OwnerRuleTest, YourOwnIsWaitedOnWhilePendingAndDeletedFirstWhenFailed) {
  EXPECT_EQ(on_found(qr("NOT_FOUND", ""), "alice"), FoundAction::create);
  EXPECT_EQ(on_found(qr("WAITING_FOR_RESOURCES", "alice"), "alice"), FoundAction::wait);
  EXPECT_EQ(on_found(qr("ACTIVE", "alice"), "alice"), FoundAction::wait);
  EXPECT_EQ(on_found(qr("FAILED", "alice"), "alice"), FoundAction::delete_first);
  EXPECT_EQ(on_found(qr("SUSPENDED", "alice"), "alice"), FoundAction::delete_first);
}

TEST(OwnerRuleTest, OneTpurunDidNotMakeIsWaitedOnButAFailedOneIsLeftAlone) {
  EXPECT_EQ(on_found(qr("WAITING_FOR_RESOURCES", ""), "alice"), FoundAction::wait);
  EXPECT_EQ(on_found(qr("FAILED", ""), "alice"), FoundAction::refuse);
}

TEST(OwnerRuleTest, AfterACreateErrorWhatExistsDecides) {
  // a 429 on gcloud's poll of the create: the API made it, with the caller's label
  const std::string rate = "ERROR: (gcloud.compute.tpus.queued-resources.create) HttpError 429: Quota exceeded";
  EXPECT_EQ(after_create_error(qr("WAITING_FOR_RESOURCES", "alice"), rate, "alice"), AfterCreateError::made);
  EXPECT_EQ(after_create_error(qr("NOT_FOUND", ""), rate, "alice"), AfterCreateError::nothing_made);
  // someone else's, or a create that lost to another one
  EXPECT_EQ(after_create_error(qr("WAITING_FOR_RESOURCES", "bob"), rate, "alice"), AfterCreateError::not_ours);
  EXPECT_EQ(after_create_error(qr("WAITING_FOR_RESOURCES", "alice"),
                               "ERROR: ALREADY_EXISTS: Resource 'x' already exists", "alice"),
            AfterCreateError::not_ours);
}

TEST(OwnerRuleTest, MessagesNameTheOwner) {
  EXPECT_EQ(found_text(qr("WAITING_FOR_RESOURCES", "alice"), "z1"),
            "queued resource v4-16 in z1 (WAITING_FOR_RESOURCES, alice's)");
  EXPECT_EQ(found_text(qr("FAILED", ""), "z1"), "queued resource v4-16 in z1 (FAILED, not made by tpurun)");
  EXPECT_EQ(owner_label_of("Alice.B"), "alice_b");
}

}  // namespace
}  // namespace tpurun
