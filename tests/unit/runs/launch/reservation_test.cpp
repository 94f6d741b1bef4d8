// Reservations with the real worker-side script, run by this machine's sh:
// every "worker" is a local shell with a lock file of its own, so two stages
// can race for the same workers for real (flock, the holder records, EOF).
#include <gmock/gmock.h>

#include <sys/file.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "fake_transport.hpp"
#include "fakes/temp_dir.hpp"
#include "runs/launch/reservation.hpp"
#include "runs/record/log_dir_layout.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "transport/local_exec.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// A local shell as worker `w`: what the stage writes to its stdin names the
// test's lock; each worker gets its own ("lock.w<N>").
class PerWorkerLock : public ExecStream {
 public:
  PerWorkerLock(std::unique_ptr<ExecStream> inner, std::string lock, int worker)
      : inner_(std::move(inner)), from_("lock='" + lock + "'"), to_("lock='" + lock + ".w" + std::to_string(worker) + "'") {}
  std::optional<TransportError> write(std::string_view data) override {
    std::string text(data);
    if (auto at = text.find(from_); at != std::string::npos) text.replace(at, from_.size(), to_);
    return inner_->write(text);
  }
  Result<StreamRead, TransportError> read(int wait_ms) override { return inner_->read(wait_ms); }
  void close_input() override { inner_->close_input(); }
  std::string err() const override { return inner_->err(); }
  std::optional<int> exit_code() override { return inner_->exit_code(); }

 private:
  std::unique_ptr<ExecStream> inner_;
  std::string from_, to_;
};

class ReservationTest : public ::testing::Test {
 protected:
  ReservationTest() {
    lock_ = dir_.path() + "/tpu.lock";
    for (int w = 0; w < 4; ++w) {
      transport_.behaviour[w].exec = [this, w](const std::string& command_line)
          -> Result<std::unique_ptr<ExecStream>, TransportError> {
        auto local = open_local_exec(command_line);
        if (!local) return unexpected(local.error());
        return std::unique_ptr<ExecStream>(new PerWorkerLock(std::move(*local), lock_, w));
      };
    }
  }
  ReserveSpec spec(const std::string& run) const {
    ReserveSpec s;
    s.run_id = run;
    s.scan = false;
    s.lock_path = lock_;
    return s;
  }
  // Whether worker w's lock can be taken right now (and let go at once).
  bool free(int w) const {
    const int fd = ::open((lock_ + ".w" + std::to_string(w)).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    const bool got = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return got;
  }

  testing::TempDir dir_;
  std::string lock_;
  testing::FakeTransport transport_;
  std::vector<Worker> workers_ = testing::make_workers(4);
};

// The workers' watchdogs for `hold_s` (they show in ps as "tpurun-reserve watchdog <hold_s>s").
int processes_with(const std::string& hold_s) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string cmdline = read_small_file(entry.path().string() + "/cmdline");
    if (cmdline.starts_with("tpurun-reserve watchdog " + hold_s + "s")) ++n;
  }
  return n;
}

TEST_F(ReservationTest, EveryWorkerIsReservedUntilGivenUp) {
  ReserveSpec held = spec("run-a");
  held.hold_s = 4242;  // names this test's watchdogs
  {
    Reservations r(workers_, transport_, held, CancelToken());
    // one watchdog per worker (started before "ready"; its exec may lag)
    for (int i = 0; i < 100 && processes_with("4242") < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(processes_with("4242"), 4);
    ASSERT_TRUE(r.complete()) << r.workers()[0].error;
    for (int w = 0; w < 4; ++w) EXPECT_FALSE(free(w)) << "w" << w;
    // The holder record names the run, for the next stage's refusal.
    EXPECT_THAT(read_small_file(lock_ + ".w0." + std::to_string(::getuid())), HasSubstr(" run-a "));
  }
  // Given up (destroyed): every lock is let go, nothing was started.
  for (int i = 0; i < 100 && !(free(0) && free(3)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int w = 0; w < 4; ++w) EXPECT_TRUE(free(w)) << "w" << w;
  // and nothing of it is left behind on the workers
  for (int i = 0; i < 100 && processes_with("4242") > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(processes_with("4242"), 0);
}

TEST_F(ReservationTest, ASecondStageIsRefusedAtTheFirstWorkerAndNamesTheHolder) {
  Reservations first(workers_, transport_, spec("run-a"), CancelToken());
  ASSERT_TRUE(first.complete());
  Reservations second(workers_, transport_, spec("run-b"), CancelToken());
  EXPECT_FALSE(second.complete());
  // Only the first worker in (host, port) order was asked.
  EXPECT_EQ(second.workers()[0].state, ReserveState::busy);
  for (int w = 1; w < 4; ++w) EXPECT_EQ(second.workers()[w].state, ReserveState::not_tried);
  ASSERT_THAT(second.workers()[0].holders, SizeIs(1));
  EXPECT_EQ(second.workers()[0].holders[0].run_id, "run-a");
  EXPECT_THAT(second.busy_lines(), ::testing::ElementsAre(HasSubstr("w0: ")));
  EXPECT_THAT(second.busy_lines()[0], HasSubstr("run run-a"));
}

TEST_F(ReservationTest, TwoStagesAtOnceNeverSplitTheWorkers) {
  for (int round = 0; round < 20; ++round) {
    std::unique_ptr<Reservations> a, b;
    std::thread ta([&] { a = std::make_unique<Reservations>(workers_, transport_, spec("run-a"), CancelToken()); });
    std::thread tb([&] { b = std::make_unique<Reservations>(workers_, transport_, spec("run-b"), CancelToken()); });
    ta.join();
    tb.join();
    EXPECT_NE(a->complete(), b->complete()) << "round " << round << ": exactly one stage takes every worker";
    const Reservations& loser = a->complete() ? *b : *a;
    for (const WorkerReservation& w : loser.workers()) EXPECT_NE(w.state, ReserveState::reserved) << "round " << round;
    a.reset();
    b.reset();
    for (int i = 0; i < 200 && !(free(0) && free(1) && free(2) && free(3)); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

TEST_F(ReservationTest, NotRequiredGoesOnBesideAHolder) {
  Reservations first(workers_, transport_, spec("run-a"), CancelToken());
  ReserveSpec anyway = spec("run-b");
  anyway.required = false;  // --skip-preflight
  Reservations second(workers_, transport_, anyway, CancelToken());
  EXPECT_TRUE(second.complete());
  for (const WorkerReservation& w : second.workers()) EXPECT_EQ(w.state, ReserveState::unreserved);
}

TEST_F(ReservationTest, AWorkerLetsGoWhenTheStageGoesQuiet) {
  ReserveSpec quiet = spec("run-a");
  quiet.hold_s = 3;  // long enough that a busy machine still sees it held first
  quiet.keepalive = std::chrono::hours(1);  // no keepalive comes
  Reservations r(workers_, transport_, quiet, CancelToken());
  ASSERT_TRUE(r.complete());
  EXPECT_FALSE(free(0));
  // Bounded by far more than hold_s: the watchdog is a process of its own.
  for (int i = 0; i < 1500 && !free(0); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(free(0)) << "the worker's watchdog should have ended the reservation";
}

TEST_F(ReservationTest, KeepalivesKeepTheReservation) {
  // Held past 1.5 times hold_s by keepalives 30 times as often: only a stall
  // of the whole machine for 3 s between two of them would let it go.
  ReserveSpec kept = spec("run-a");
  kept.hold_s = 3;
  kept.keepalive = std::chrono::milliseconds(100);
  Reservations r(workers_, transport_, kept, CancelToken());
  ASSERT_TRUE(r.complete());
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  EXPECT_FALSE(free(0));
}

TEST_F(ReservationTest, TheLaunchHandsTheLockToTheJobsWrapper) {
  testing::TempDir logs, code;
  ::chmod(logs.path().c_str(), 0700);
  Reservations r({workers_[0]}, transport_, spec("run-a"), CancelToken());
  ASSERT_TRUE(r.complete());
  LaunchSpec job{"run-a", logs.path(), code.path(), {"sh", "-c", "sleep 1; ls -l /proc/$$/fd >fds.txt 2>&1; true"},
                 {}, 1, 1, 1, std::nullopt};
  const LaunchResult launched = r.launch(job);
  ASSERT_THAT(launched.pids, SizeIs(1)) << launched.outcomes[0].out << launched.outcomes[0].err;
  // The job runs, its wrapper holds the worker; the record names the wrapper.
  EXPECT_FALSE(free(0));
  const std::string exitf = job_file(logs.path(), 0, 1, "exit");
  for (int i = 0; i < 200 && read_small_file(exitf).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(read_small_file(exitf), "0\n");
  for (int i = 0; i < 100 && !free(0); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(free(0)) << "the wrapper should let the lock go when the job ends";
  // The job itself never had the lock's descriptor.
  EXPECT_THAT(read_small_file(code.path() + "/fds.txt"), ::testing::Not(HasSubstr("tpu.lock")));
}

}  // namespace
}  // namespace tpurun
