// Claims on the board: one live claim per pod, expiry by the clock, release,
// extend, forged and corrupt files ignored, and one winner among racers.
#include "tpurun/board/claims.hpp"

#include <gmock/gmock.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "fakes/temp_dir.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class ClaimsTest : public ::testing::Test {
 protected:
  // alice and bob are both the test's own uid; "mallory" is some other uid.
  Board board() const {
    return Board(temp_.path(), [](const std::string& user) -> std::optional<uid_t> {
      if (user == "alice" || user == "bob") return ::geteuid();
      if (user == "mallory") return ::geteuid() + 1;
      return std::nullopt;
    });
  }
  ClaimOutcome take(const std::string& user, std::chrono::seconds d, WallClock::time_point now,
                    const std::string& pod = "sim", bool extend = false) const {
    return board().claim(pod, user, d, "note of " + user, "host1", now, extend);
  }

  testing::TempDir temp_;
  WallClock::time_point t0 = WallClock::from_time_t(1'800'000'000);
};

TEST_F(ClaimsTest, OneLiveClaimPerPodAndTheRefusalNamesTheHolder) {
  ClaimOutcome mine = take("alice", 1h, t0);
  ASSERT_TRUE(mine.ok);
  EXPECT_EQ(mine.claim.seq, 1);

  auto held = board().holder("sim", t0 + 1min);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->user, "alice");
  EXPECT_EQ(held->note, "note of alice");
  EXPECT_EQ(held->expires_at, t0 + 1h);

  ClaimOutcome theirs = take("bob", 1h, t0 + 1min);
  EXPECT_FALSE(theirs.ok);
  EXPECT_EQ(theirs.claim.user, "alice");
  EXPECT_TRUE(take("bob", 1h, t0 + 1min, "other").ok);  // another pod is free
}

TEST_F(ClaimsTest, AClaimExpiresByItself) {
  ASSERT_TRUE(take("alice", 10s, t0).ok);
  EXPECT_TRUE(board().holder("sim", t0 + 9s));
  EXPECT_FALSE(board().holder("sim", t0 + 10s));

  ClaimOutcome next = take("bob", 1h, t0 + 11s);
  ASSERT_TRUE(next.ok);
  EXPECT_EQ(next.claim.seq, 2);
  EXPECT_EQ(board().holder("sim", t0 + 12s)->user, "bob");
}

TEST_F(ClaimsTest, ReleaseEndsOnlyYourOwnClaim) {
  ASSERT_TRUE(take("alice", 1h, t0).ok);
  EXPECT_FALSE(board().release("sim", "bob", t0 + 1s));
  EXPECT_TRUE(board().holder("sim", t0 + 2s));

  auto released = board().release("sim", "alice", t0 + 3s);
  ASSERT_TRUE(released);
  EXPECT_EQ(released->released_at, t0 + 3s);
  EXPECT_FALSE(board().holder("sim", t0 + 4s));
  EXPECT_TRUE(take("bob", 1h, t0 + 5s).ok);
}

TEST_F(ClaimsTest, ClaimingAgainNeedsExtendWhichMovesTheExpiry) {
  ASSERT_TRUE(take("alice", 1h, t0).ok);
  ClaimOutcome again = take("alice", 2h, t0 + 1min);
  EXPECT_FALSE(again.ok);
  EXPECT_EQ(again.claim.user, "alice");

  ClaimOutcome extended = take("alice", 2h, t0 + 1min, "sim", true);
  ASSERT_TRUE(extended.ok);
  EXPECT_EQ(extended.claim.seq, 1);
  EXPECT_EQ(board().holder("sim", t0 + 90min)->expires_at, t0 + 1min + 2h);
  EXPECT_FALSE(take("bob", 1h, t0 + 1min, "sim", true).ok);  // --extend never takes someone else's
}

TEST_F(ClaimsTest, AForgedClaimIsIgnoredWithAWarningNamingTheFile) {
  ASSERT_TRUE(take("alice", 1h, t0, "warmup").ok);  // creates the board
  Claim forged;
  forged.pod = "sim";
  forged.seq = 5;
  forged.user = "mallory";  // our file, but mallory's name: not ours to sign
  forged.created_at = t0;
  forged.expires_at = t0 + 10h;
  const std::string path = temp_.path() + "/.board/sim.5.json";
  temp_.write(".board/sim.5.json", claim_to_json(forged));
  ::chmod(path.c_str(), 0644);

  std::vector<std::string> warnings;
  EXPECT_FALSE(board().holder("sim", t0 + 1s, &warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr(path));
  EXPECT_THAT(warnings[0], HasSubstr("mallory"));

  ClaimOutcome real = take("bob", 1h, t0 + 2s);
  ASSERT_TRUE(real.ok);
  EXPECT_EQ(real.claim.seq, 6);  // above the forged number, never under it
}

TEST_F(ClaimsTest, CorruptAndMisnamedFilesCountAsNoClaim) {
  ASSERT_TRUE(take("alice", 1h, t0, "warmup").ok);
  temp_.write(".board/sim.1.json", "{ not json");
  Claim other;
  other.pod = "elsewhere";
  other.seq = 1;
  other.user = "alice";
  other.created_at = t0;
  other.expires_at = t0 + 1h;
  temp_.write(".board/sim.2.json", claim_to_json(other));  // a copy of another pod's claim
  ::chmod((temp_.path() + "/.board/sim.2.json").c_str(), 0644);

  std::vector<std::string> warnings;
  EXPECT_FALSE(board().holder("sim", t0, &warnings));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_THAT(warnings[0], HasSubstr("corrupt claim file " + temp_.path() + "/.board/sim.1.json"));
  EXPECT_THAT(warnings[1], HasSubstr("names pod 'elsewhere'"));
}

TEST_F(ClaimsTest, TheBoardIsSharedLikeTmp) {
  ASSERT_TRUE(take("alice", 1h, t0).ok);
  struct stat st {};
  ASSERT_EQ(::lstat((temp_.path() + "/.board").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  ASSERT_EQ(::lstat((temp_.path() + "/.board/sim.1.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);

  ::chmod((temp_.path() + "/.board").c_str(), 0777);  // without the sticky bit anyone could delete claims
  EXPECT_THAT([&] { board().holder("sim", t0); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("chmod 1777")));
}

TEST_F(ClaimsTest, NoBoardYetMeansNoClaims) {
  EXPECT_FALSE(board().holder("sim", t0));
  EXPECT_FALSE(std::filesystem::exists(temp_.path() + "/.board"));  // reading creates nothing
}

TEST_F(ClaimsTest, TwoClaimantsAtOnceGetExactlyOneWinner) {
  for (int round = 0; round < 30; ++round) {
    const std::string pod = "race" + std::to_string(round);
    std::atomic<int> arrived{0};  // both start together (std::latch needs GCC 11)
    std::atomic<int> winners{0};
    std::vector<std::string> losers_saw;
    std::mutex mu;
    auto claimant = [&](const std::string& user) {
      ++arrived;
      while (arrived.load() < 2) std::this_thread::yield();
      ClaimOutcome out = take(user, 1h, t0, pod);
      if (out.ok) {
        ++winners;
      } else {
        std::lock_guard lock(mu);
        losers_saw.push_back(out.claim.user);
      }
    };
    std::thread a(claimant, "alice"), b(claimant, "bob");
    a.join();
    b.join();
    ASSERT_EQ(winners.load(), 1) << pod;
    auto held = board().holder(pod, t0);
    ASSERT_TRUE(held);
    ASSERT_EQ(losers_saw, std::vector<std::string>{held->user}) << "the loser is told who won";
  }
}

TEST(ClaimRecordTest, RoundTripsWithUtcTimes) {
  Claim c;
  c.pod = "v4-32";
  c.seq = 7;
  c.user = "bob";
  c.note = "sweep";
  c.created_at = WallClock::from_time_t(1'800'000'000);
  c.expires_at = c.created_at + std::chrono::hours(3);
  std::string text = claim_to_json(c);
  EXPECT_THAT(text, HasSubstr("\"expires_at\": \"2027-01-15T11:00:00Z\""));
  Claim back = claim_from_json(text);
  EXPECT_EQ(back.expires_at, c.expires_at);
  EXPECT_EQ(back.user, "bob");
  EXPECT_FALSE(back.released_at);
  EXPECT_THROW(claim_from_json("{\"pod\": 1}"), std::runtime_error);
}

}  // namespace
}  // namespace tpurun

namespace tpurun {
namespace {

// Idle marks: a run's watcher says since when the run's chips are idle; the
// board believes a mark only from its own user, and claims ignore marks.
TEST_F(ClaimsTest, IdleMarksAreReadBackForTheirOwnUserOnly) {
  board().mark_idle("20261124_100000_abcdef_sim", "alice", t0);
  auto since = board().idle_since("20261124_100000_abcdef_sim", "alice");
  ASSERT_TRUE(since);
  EXPECT_EQ(*since, t0);
  EXPECT_FALSE(board().idle_since("20261124_100000_abcdef_sim", "bob"));      // another user named in it
  EXPECT_FALSE(board().idle_since("20261124_100000_abcdef_sim", "mallory"));  // owned by another uid
  EXPECT_FALSE(board().idle_since("no-such-run", "alice"));
  EXPECT_FALSE(board().idle_since("../x", "alice"));
  // A mark is no claim: the claim scan neither counts nor warns about it.
  BoardScan scan = board().scan();
  EXPECT_TRUE(scan.claims.empty());
  EXPECT_TRUE(scan.warnings.empty());
  board().clear_idle("20261124_100000_abcdef_sim");
  EXPECT_FALSE(board().idle_since("20261124_100000_abcdef_sim", "alice"));
  board().clear_idle("20261124_100000_abcdef_sim");  // twice is fine
}

TEST_F(ClaimsTest, AnIdleMarkOthersCanWriteCountsForNothing) {
  board().mark_idle("r1", "alice", t0);
  ASSERT_EQ(::chmod((temp_.path() + "/.board/idle-r1").c_str(), 0666), 0);
  EXPECT_FALSE(board().idle_since("r1", "alice"));
}

}  // namespace
}  // namespace tpurun
