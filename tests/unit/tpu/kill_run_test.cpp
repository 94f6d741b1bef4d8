#include <gtest/gtest.h>

#include "fake_transport.hpp"
#include "scan_fixtures.hpp"
#include "scripted_transport.hpp"
#include "tpurun/tpu/kill.hpp"

namespace tpurun {
namespace {

using testing::kBobHoldsEverything;
using testing::make_workers;
using testing::script_kind;
using testing::ScriptedReply;
using testing::ScriptedTransport;

// Alice's job (100, child 101) holds worker 0 and its lock.
const std::string kAliceJobScan = R"(TPURUN-SCAN 1
caller 1001 alice
priv root
self 900
hold 100 /dev/accel0
hold 101 /dev/accel0
lock 1 1001 alice 3 1 100
logs 0
begin start
1 7
100 5000
101 5003
900 9000
end start
begin pinfo
    100  1001 alice   100   100     1    50 python3 train.py
    101  1001 alice   100   100   100    50 python3 train.py
end pinfo
begin proc
      1       0       0       0     0     500 init
    100       1     100     100  1001      50 python3 train.py
    101     100     100     100  1001      50 python3 train.py
    900       1       0       0     0       0 sh -s -- kill
end proc
denied 0
end
)";

// After the kill: alice's SIGKILLed job left its lockfile, which nobody holds.
const std::string kStaleScan =
    "TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nself 901\nlock 1 1001 alice 3 0 -\nlogs 0\ndenied 0\nend\n";

// The argument, as shell_join quotes it, on the command line.
bool has_arg(const RemoteCommand& c, const std::string& arg) {
  return (" " + c.command_line + " ").find(" '" + arg + "' ") != std::string::npos;
}

ScriptedReply pod_reply(int worker, const RemoteCommand& command) {
  const std::string kind = script_kind(command);
  if (worker == 1) return {kind == "TPURUN-SCAN" ? kBobHoldsEverything : "", "", 0};
  if (kind == "TPURUN-SCAN") return {has_arg(command, "kill") ? kAliceJobScan : kStaleScan, "", 0};
  if (kind == "TPURUN-KILL") {
    return {"TPURUN-KILL 1\nsignal TERM -100 ok\ngone 100 term\nsignal KILL -100 ok\ngone 101 kill\nend\n",
            "", 0};
  }
  if (kind == "TPURUN-CLEAN") return {"TPURUN-CLEAN 1\nremoved /tmp/libtpu_lockfile\nend\n", "", 0};
  return {"", "unexpected command", 1};
}

KillRequest request() {
  KillRequest r;
  r.device_globs = {"/dev/accel*"};
  r.grace_ms = 2000;
  return r;
}

// Given alice's job on w0, bob's on w1 and an unreachable w2, when alice
// kills, then w0 sees scan, kill (as alice, no sudo), scan, cleanup and ends
// free; w1 is only scanned; w2 is reported unreachable.
TEST(KillOnWorkersTest, KillsOwnJobLeavesOthersAndCleansTheStaleLock) {
  ScriptedTransport transport(pod_reply);
  transport.unreachable = {2};

  auto reports = kill_on_workers(make_workers(3), transport, 3, CancelToken(), request());

  ASSERT_EQ(reports.size(), 3u);
  std::vector<RemoteCommand> w0;
  int w1_commands = 0;
  for (const auto& ran : transport.commands_ran()) {
    if (ran.worker == 0) w0.push_back(ran.command);
    if (ran.worker == 1) ++w1_commands;
  }
  ASSERT_EQ(w0.size(), 4u);
  EXPECT_EQ(script_kind(w0[0]), "TPURUN-SCAN");
  EXPECT_TRUE(has_arg(w0[0], "kill"));
  EXPECT_EQ(script_kind(w0[1]), "TPURUN-KILL");
  EXPECT_EQ(w0[1].command_line.find("sudo"), std::string::npos) << w0[1].command_line;
  // grace in centiseconds, no audit, the group, each victim with its start time
  for (const char* arg : {"200", "0", "g:100", "100:1001:100:5000", "101:1001:100:5003"}) {
    EXPECT_TRUE(has_arg(w0[1], arg)) << arg << " in " << w0[1].command_line;
  }
  EXPECT_EQ(script_kind(w0[2]), "TPURUN-SCAN");
  EXPECT_EQ(script_kind(w0[3]), "TPURUN-CLEAN");
  EXPECT_EQ(w0[3].command_line.find("sudo"), std::string::npos);  // alice's own lockfile
  EXPECT_TRUE(has_arg(w0[3], "3"));

  EXPECT_EQ(reports[0].gone_term, std::vector<int>{100});
  EXPECT_EQ(reports[0].gone_kill, std::vector<int>{101});
  EXPECT_EQ(reports[0].cleaned.removed, std::vector<std::string>{kLibtpuLockfile});
  EXPECT_EQ(reports[0].state, TpuState::free) << reports[0].error;

  EXPECT_EQ(w1_commands, 1);
  EXPECT_FALSE(reports[1].signalled);
  EXPECT_EQ(reports[1].plan.spared.size(), 3u);
  EXPECT_EQ(reports[1].state, TpuState::busy_other);

  EXPECT_EQ(reports[2].state, TpuState::unreachable);
  EXPECT_EQ(reports[2].error, "connection refused");
}

TEST(KillOnWorkersTest, DryRunOnlyScans) {
  ScriptedTransport transport(pod_reply);
  KillRequest r = request();
  r.dry_run = true;

  auto reports = kill_on_workers(make_workers(2), transport, 2, CancelToken(), r);

  for (const auto& ran : transport.commands_ran()) EXPECT_EQ(script_kind(ran.command), "TPURUN-SCAN");
  EXPECT_EQ(reports[0].plan.victims.size(), 2u);
  EXPECT_TRUE(reports[0].cleanup.remove_lockfile);  // the lock would be left by SIGKILL
  EXPECT_EQ(reports[0].state, TpuState::free);      // predicted
  EXPECT_EQ(reports[1].state, TpuState::busy_other);
}

TEST(KillOnWorkersTest, ForceSignalsOtherUsersViaSudoAfterTheAudit) {
  ScriptedTransport transport([](int, const RemoteCommand& c) -> ScriptedReply {
    const std::string kind = script_kind(c);
    if (kind == "TPURUN-SCAN") return {kBobHoldsEverything, "", 0};
    if (kind == "TPURUN-KILL")
      return {"TPURUN-KILL 1\ngone 406 term\ngone 407 term\ngone 408 term\nend\n", "", 0};
    return {"TPURUN-CLEAN 1\nend\n", "", 0};
  });
  KillRequest r = request();
  r.options.force = true;
  std::vector<int> audited;
  r.before_signal = [&](const Worker&, const LockScan&, const KillPlan& plan) -> std::optional<std::string> {
    for (const Victim& v : plan.victims) audited.push_back(v.process.pid);
    return std::nullopt;
  };

  auto reports = kill_on_workers(make_workers(1), transport, 1, CancelToken(), r);

  EXPECT_EQ(audited, (std::vector<int>{406, 407, 408}));
  auto ran = transport.commands_ran();
  ASSERT_GE(ran.size(), 2u);
  EXPECT_EQ(ran[1].command.command_line.rfind("exec sudo -n sh -s -- ", 0), 0u)
      << ran[1].command.command_line;
  EXPECT_TRUE(has_arg(ran[1].command, "1")) << "the worker must audit too: " << ran[1].command.command_line;
  EXPECT_EQ(reports[0].gone_term.size(), 3u);
}

// The worker's syslog refused the record: the kill script signalled nothing,
// and the report says so instead of "signalled".
TEST(KillOnWorkersTest, WorkerSyslogRefusedMeansNothingWasSignalled) {
  ScriptedTransport transport([](int, const RemoteCommand& c) -> ScriptedReply {
    const std::string kind = script_kind(c);
    if (kind == "TPURUN-SCAN") return {kBobHoldsEverything, "", 0};
    if (kind == "TPURUN-KILL")
      return {"TPURUN-KILL 1\nskipped 406 audit-failed\nskipped 407 audit-failed\nend\n", "", 0};
    return {"TPURUN-CLEAN 1\nend\n", "", 0};
  });
  KillRequest r = request();
  r.options.force = true;
  auto reports = kill_on_workers(make_workers(1), transport, 1, CancelToken(), r);
  EXPECT_FALSE(reports[0].signalled);
  EXPECT_TRUE(reports[0].audit_failed);
  EXPECT_NE(reports[0].error.find("nothing was signalled"), std::string::npos) << reports[0].error;
  EXPECT_EQ(reports[0].state, TpuState::busy_other);
}

TEST(KillOnWorkersTest, RefusedAuditMeansNothingIsSignalled) {
  ScriptedTransport transport([](int, const RemoteCommand&) {
    return ScriptedReply{kBobHoldsEverything, "", 0};
  });
  KillRequest r = request();
  r.options.force = true;
  r.before_signal = [](const Worker&, const LockScan&, const KillPlan&) -> std::optional<std::string> {
    return std::string("cannot write the audit log");
  };

  auto reports = kill_on_workers(make_workers(1), transport, 1, CancelToken(), r);

  EXPECT_EQ(transport.commands_ran().size(), 1u);
  EXPECT_FALSE(reports[0].signalled);
  EXPECT_EQ(reports[0].error, "cannot write the audit log");
  EXPECT_EQ(reports[0].state, TpuState::busy_other);
}

TEST(KillOnWorkersTest, SudoRefusedForForceIsAClearError) {
  ScriptedTransport transport([](int, const RemoteCommand& c) -> ScriptedReply {
    if (script_kind(c) == "TPURUN-KILL") return {"", "sudo: a password is required\n", 1};
    return {kBobHoldsEverything, "", 0};
  });
  KillRequest r = request();
  r.options.force = true;
  auto reports = kill_on_workers(make_workers(1), transport, 1, CancelToken(), r);
  EXPECT_NE(reports[0].error.find("passwordless sudo"), std::string::npos) << reports[0].error;
  EXPECT_NE(reports[0].error.find("a password is required"), std::string::npos) << reports[0].error;
  EXPECT_EQ(reports[0].state, TpuState::busy_other);
}

TEST(ScanWorkersTest, GarbledScanIsAnErrorNotAVerdict) {
  testing::FakeTransport transport;
  transport.behaviour[0].out = "TPURUN-SCAN 1\ncaller 1001 alice\n";
  transport.behaviour[1].out = "";
  transport.behaviour[1].err = "sh: 1: find: not found\n";
  transport.behaviour[1].exit_code = 127;
  auto results = scan_workers(make_workers(2), transport, 2, CancelToken(), {"/dev/accel*"});
  EXPECT_EQ(results[0].state, TpuState::error);
  EXPECT_NE(results[0].error.find("ended early"), std::string::npos);
  EXPECT_EQ(results[1].state, TpuState::error);
  EXPECT_NE(results[1].error.find("exited with code 127: sh: 1: find: not found"), std::string::npos)
      << results[1].error;
}

TEST(ScanCommandTest, TriesSudoThenFallsBackToTheLoginUserWithTheScriptOnStdin) {
  RemoteCommand c = build_scan_command({{"/dev/accel*", "/dev/vfio/[0-9]*"}, false});
  EXPECT_EQ(c.command_line,
            "sudo -n sh -s -- 'status' '/dev/accel*' '/dev/vfio/[0-9]*' 2>/dev/null || "
            "exec sh -s -- 'status' '/dev/accel*' '/dev/vfio/[0-9]*'");
  EXPECT_EQ(c.stdin_data, worker::kScanSh);
}

}  // namespace
}  // namespace tpurun
