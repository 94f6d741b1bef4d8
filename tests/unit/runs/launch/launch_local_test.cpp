// The launcher and its wrapper, run here (LocalTransport): the job's output
// lands in the log byte for byte, the exit record follows it, and a child the
// job leaves behind neither holds up the record nor loses its output.
#include <gmock/gmock.h>

#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "fakes/temp_dir.hpp"
#include "runs/record/log_dir_layout.hpp"
#include "tpurun/runs/launch/launch.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/util/atomic_file.hpp"
#include "transport/local_transport.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;

class LaunchLocalTest : public ::testing::Test {
 protected:
  LaunchLocalTest() { ::chmod(logs_.path().c_str(), 0700); }

  // Launches `argv` as worker 0 and waits for its exit record.
  std::string run(const std::vector<std::string>& argv, const std::string& want_in_log = "") {
    LaunchSpec spec{"run-1", logs_.path(), code_.path(), argv, {{"SECRET_X", "v1"}}, 1, 1, 1, std::nullopt};
    LocalTransport transport;
    auto conn = transport.connect(Worker{0, "localhost", 22}, CancelToken());
    EXPECT_TRUE(conn);
    CaptureSink sink;
    auto ran = (*conn)->run(launch_command(spec, Worker{0, "localhost", 22}), sink, CancelToken());
    EXPECT_TRUE(ran && ran->code == 0) << sink.out << sink.err;
    EXPECT_TRUE(parse_launched_pid(sink.out)) << sink.out;
    const std::string exitf = job_file(logs_.path(), 0, 1, "exit");
    for (int i = 0; i < 200 && read_small_file(exitf).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string code = read_small_file(exitf);
    const std::string log = logs_.path() + "/worker0.log";
    for (int i = 0; i < 100 && read_small_file(log).find(want_in_log) == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    log_ = read_small_file(log);
    return code;
  }

  testing::TempDir logs_;
  testing::TempDir code_;
  std::string log_;
};

TEST_F(LaunchLocalTest, TheLogHoldsTheJobsBytesAndTheExitRecordItsCode) {
  EXPECT_EQ(run({"sh", "-c", "echo hello; printf 'step 1\\rstep 2\\n' >&2; echo \"x=$SECRET_X\"; exit 3"}), "3\n");
  EXPECT_THAT(log_, HasSubstr("hello\n"));
  EXPECT_THAT(log_, HasSubstr("step 1\rstep 2\n"));
  EXPECT_THAT(log_, HasSubstr("x=v1\n"));
}

TEST_F(LaunchLocalTest, AKilledJobsCodeSaysTheSignal) {
  EXPECT_EQ(run({"sh", "-c", "kill -TERM $$"}), "143\n");
}

TEST_F(LaunchLocalTest, AChildLeftBehindHoldsUpNothingAndLosesNothing) {
  // The job exits at once; its child writes a second later, holding the output.
  EXPECT_EQ(run({"sh", "-c", "(sleep 1; echo late) & echo early; exit 0"}, "late"), "0\n");
  EXPECT_THAT(log_, HasSubstr("early\n"));
  EXPECT_THAT(log_, HasSubstr("late\n"));
}

// A dir the worker cannot see: the launcher opens each dir on the way to it
// (NFS's close-to-open revalidation of a stale view), looks again, and only
// then says what is missing, with its own exit code. Here nothing is stale,
// so the second look fails too; the e2e suite's NFS mode shows the first
// look failing and the second succeeding.
TEST_F(LaunchLocalTest, AMissingDirIsLookedUpAgainThenReported) {
  LocalTransport transport;
  auto conn = transport.connect(Worker{0, "localhost", 22}, CancelToken());
  ASSERT_TRUE(conn);
  for (const bool missing_logs : {true, false}) {
    const std::string gone = (missing_logs ? logs_.path() : code_.path()) + "/a dir/not here";
    LaunchSpec spec{"run-1", missing_logs ? gone : logs_.path(), missing_logs ? code_.path() : gone,
                    {"true"}, {}, 1, 1, 1, std::nullopt};
    CaptureSink sink;
    auto ran = (*conn)->run(launch_command(spec, Worker{0, "localhost", 22}), sink, CancelToken());
    ASSERT_TRUE(ran);
    EXPECT_EQ(ran->code, missing_logs ? 98 : 97) << sink.err;
    EXPECT_THAT(sink.err, HasSubstr(gone + " is not visible on this worker")) << sink.err;
  }
}

}  // namespace
}  // namespace tpurun
