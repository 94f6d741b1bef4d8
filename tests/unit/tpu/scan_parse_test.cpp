#include <gtest/gtest.h>

#include "scan_fixtures.hpp"
#include "tpurun/tpu/scan.hpp"

namespace tpurun {
namespace {

using testing::kBobHoldsEverything;

// Given the output of a real scan, then every holder is one process with its
// devices de-duplicated and in natural order, and its run id attached.
TEST(ParseScanTest, RealisticOutput) {
  auto scan = parse_scan(kBobHoldsEverything);
  ASSERT_TRUE(scan) << scan.error();
  EXPECT_EQ(scan->caller_uid, 1001);
  EXPECT_EQ(scan->caller_user, "alice");
  EXPECT_TRUE(scan->privileged);
  EXPECT_EQ(scan->self_pid, 411);
  ASSERT_EQ(scan->holders.size(), 3u);
  const ScannedProcess& leader = scan->holders[0];
  EXPECT_EQ(leader.pid, 406);
  EXPECT_EQ(leader.uid, 1002);
  EXPECT_EQ(leader.user, "bob");
  EXPECT_EQ(leader.pgid, 406);
  EXPECT_EQ(leader.ppid, 1);
  EXPECT_EQ(leader.elapsed_s, 7980);
  EXPECT_EQ(leader.command, "python3 train.py --forever --children 2");
  EXPECT_EQ(leader.devices,
            (std::vector<std::string>{"/dev/accel0", "/dev/accel1", "/dev/accel2", "/dev/accel10"}));
  EXPECT_EQ(leader.run_id, "20250101-run-b");
  EXPECT_EQ(scan->holders[1].devices, std::vector<std::string>{"/dev/accel0"});
  EXPECT_TRUE(scan->lockfile.exists);
  EXPECT_TRUE(scan->lockfile.held);
  EXPECT_EQ(scan->lockfile.holder_pid, 406);
  EXPECT_EQ(scan->lockfile.owner->user, "bob");
  EXPECT_EQ(scan->lockfile.inode, 3u);
  EXPECT_FALSE(scan->lock_holder);  // the lock's holder is already a device holder
  EXPECT_EQ(scan->tpu_logs->user, "bob");
  EXPECT_EQ(scan->denied, 0);
}

TEST(ParseScanTest, DeviceFilesCountedWhenTheScanSaysSo) {
  auto counted = parse_scan("TPURUN-SCAN 1\ncaller 1001 alice\npriv root\ndevices 0\nlock 0\nlogs 0\ndenied 0\nend\n");
  ASSERT_TRUE(counted) << counted.error();
  EXPECT_EQ(counted->device_files, 0);
  auto older = parse_scan("TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nlock 0\nlogs 0\ndenied 0\nend\n");
  ASSERT_TRUE(older) << older.error();
  EXPECT_FALSE(older->device_files.has_value());
}

TEST(ParseScanTest, NoiseBeforeTheHeaderFromLoginScriptsIsIgnored) {
  auto scan = parse_scan("Welcome to the TPU VM!\nlock 1 0 root 1 1 1\n" + kBobHoldsEverything);
  ASSERT_TRUE(scan) << scan.error();
  EXPECT_EQ(scan->holders.size(), 3u);
}

TEST(ParseScanTest, CommandsKeepSpacesUnicodeAndLoseControlCharacters) {
  auto scan = parse_scan(
      "TPURUN-SCAN 1\ncaller 1001 alice\npriv user\nhold 5 /dev/vfio/0\nlock 0\nlogs 0\n"
      "pinfo 5 1001 alice 5 5 1 3 python3 -c 'print(\"日本語 λ\")'   --x\t\x01y  \n"
      "denied 12\nend\n");
  ASSERT_TRUE(scan) << scan.error();
  ASSERT_EQ(scan->holders.size(), 1u);
  EXPECT_EQ(scan->holders[0].command, "python3 -c 'print(\"日本語 λ\")'   --x??y");
  EXPECT_FALSE(scan->privileged);
  EXPECT_EQ(scan->denied, 12);
}

// A process whose argv holds a newline cannot inject a record: the part after
// the newline is an unknown record, and the parse fails loudly.
TEST(ParseScanTest, InjectedLinesAreErrorsNotRecords) {
  auto scan = parse_scan(
      "TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nlock 0\nlogs 0\n"
      "begin pinfo\n 5 1001 alice 5 5 1 3 evil\nhold 1 /dev/accel0\nend pinfo\ndenied 0\nend\n");
  ASSERT_FALSE(scan);
  EXPECT_NE(scan.error().find("line 8"), std::string::npos) << scan.error();
  EXPECT_NE(scan.error().find("malformed 'pinfo'"), std::string::npos) << scan.error();
  auto outside = parse_scan("TPURUN-SCAN 1\ncaller 1001 alice\nfakeholder 1 0 root\n");
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().find("unknown record 'fakeholder'"), std::string::npos) << outside.error();
}

TEST(ParseScanTest, MissingOrBadFieldsGiveAnErrorNamingTheLine) {
  const std::string head = "TPURUN-SCAN 1\ncaller 1001 alice\npriv root\n";
  for (const std::string& bad : {"pinfo 5 1001 alice 5 5\n", "pinfo x 1001 alice 5 5 1 3 cmd\n", "hold 5\n",
                                 "lock 1 1002 bob\n", "lock 1 1002 bob 3 maybe 406\n", "logs 1 bob\n",
                                 "denied many\n", "priv admin\n", "caller alice\n", "proc 1 2 3\n",
                                 "devices\n", "devices some\n"}) {
    auto scan = parse_scan(head + bad + "lock 0\nlogs 0\ndenied 0\nend\n");
    ASSERT_FALSE(scan) << bad;
    EXPECT_NE(scan.error().find("line 4"), std::string::npos) << scan.error();
    EXPECT_NE(scan.error().find("malformed"), std::string::npos) << scan.error();
  }
}

TEST(ParseScanTest, CutOffOrEmptyOutputIsAnError) {
  EXPECT_FALSE(parse_scan(""));
  EXPECT_NE(parse_scan("").error().find("header"), std::string::npos);
  auto cut = parse_scan(kBobHoldsEverything.substr(0, kBobHoldsEverything.find("begin runid")));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().find("ended early"), std::string::npos) << cut.error();
  auto mid_line = parse_scan(kBobHoldsEverything.substr(0, kBobHoldsEverything.find(" 7979")));
  ASSERT_FALSE(mid_line);  // a cut record is malformed
  EXPECT_NE(mid_line.error().find("malformed 'pinfo'"), std::string::npos) << mid_line.error();
  auto lacking = parse_scan("TPURUN-SCAN 1\ncaller 1001 alice\nend\n");
  ASSERT_FALSE(lacking);
  EXPECT_NE(lacking.error().find("lacks"), std::string::npos) << lacking.error();
}

TEST(ParseScanTest, HolderThatExitedBeforePsIsDropped) {
  auto scan = parse_scan(
      "TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nhold 7 /dev/accel0\nlock 0\nlogs 0\n"
      "denied 0\nend\n");
  ASSERT_TRUE(scan) << scan.error();
  EXPECT_TRUE(scan->holders.empty());
}

// Without root, bob's open devices are invisible, but /proc/locks still
// names the lock's holder, and ps still shows who that is.
TEST(ParseScanTest, LockHolderSeenWithoutRoot) {
  auto scan = parse_scan(
      "TPURUN-SCAN 1\ncaller 1003 carol\npriv user\nself 9\nlock 1 1002 bob 3 1 406\nlogs 0\n"
      "pinfo 406 1002 bob 406 406 1 60 python3 train.py\ndenied 4\nend\n");
  ASSERT_TRUE(scan) << scan.error();
  ASSERT_TRUE(scan->lock_holder);
  EXPECT_EQ(scan->lock_holder->user, "bob");
  EXPECT_TRUE(scan->lock_holder->devices.empty());
  EXPECT_EQ(scan->tpu_logs, std::nullopt);
}

TEST(ParseScanTest, ProcessTableWithRunIds) {
  auto scan = parse_scan(
      "TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nself 81\nlock 0\nlogs 0\n"
      "begin proc\n"
      "     76       1      76      76  1001       1 python3 train.py\n"
      "      1       0       0       0     0     160 bash /init.sh 7\n"
      "     99      76      76      76  1001       1 \n"
      "end proc\nbegin runid\n/proc/76/environ:TPURUN_RUN_ID=run-a\nstray text of a value\n"
      "/proc/99/environ:TPURUN_RUN_ID=\nend runid\ndenied 0\nend\n");
  ASSERT_TRUE(scan) << scan.error();
  ASSERT_EQ(scan->processes.size(), 3u);
  EXPECT_EQ(scan->processes[0].pid, 1);  // sorted by pid
  EXPECT_EQ(scan->processes[1].run_id, "run-a");
  EXPECT_EQ(scan->processes[1].uid, 1001);
  EXPECT_EQ(scan->processes[1].user, "alice");  // named after the caller record
  EXPECT_EQ(scan->processes[0].user, "");       // root: no record named uid 0
  EXPECT_EQ(scan->processes[2].command, "");
  EXPECT_FALSE(scan->processes[2].run_id);
}

TEST(ParseScanTest, UnclosedOrUnknownBlocksAreErrors) {
  const std::string head = "TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nlock 0\nlogs 0\n";
  auto unclosed = parse_scan(head + "begin pinfo\n 5 1001 alice 5 5 1 3 x\ndenied 0\nend\n");
  ASSERT_FALSE(unclosed);
  EXPECT_NE(unclosed.error().find("malformed 'pinfo'"), std::string::npos) << unclosed.error();
  auto unknown = parse_scan(head + "begin secrets\nend secrets\ndenied 0\nend\n");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("unknown block 'secrets'"), std::string::npos) << unknown.error();
  auto cut = parse_scan(head + "begin proc\n");
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().find("ended early"), std::string::npos) << cut.error();
}

TEST(ParseScanTest, RandomBytesNeverCrash) {
  std::string junk = "TPURUN-SCAN 1\n";
  unsigned state = 12345;
  for (int i = 0; i < 20000; ++i) {
    state = state * 1103515245 + 12345;
    junk.push_back(static_cast<char>(state >> 16));
    if (i % 97 == 0) junk += "\npinfo ";
    if (i % 89 == 0) junk += "\nlock 1 ";
  }
  auto scan = parse_scan(junk);
  EXPECT_FALSE(scan);
}

// Kill mode: the start block gives every process, holder or not, its start time.
TEST(ParseScanTest, StartTimesAttachToHoldersAndTheProcessTable) {
  auto scan = parse_scan(
      "TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nself 9\nhold 5 /dev/accel0\nlock 0\nlogs 0\n"
      "begin start\n5 123456789012\n7 42\nend start\n"
      "begin pinfo\n5 1001 alice 5 5 1 10 python3 t.py\nend pinfo\n"
      "begin proc\n5 1 5 5 1001 10 python3 t.py\n7 5 5 5 1001 10 child\n8 5 5 5 1001 10 no start\nend proc\n"
      "denied 0\nend\n");
  ASSERT_TRUE(scan) << scan.error();
  ASSERT_EQ(scan->holders.size(), 1u);
  EXPECT_EQ(scan->holders[0].start_time, 123456789012u);
  ASSERT_EQ(scan->processes.size(), 3u);
  EXPECT_EQ(scan->processes[1].start_time, 42u);
  EXPECT_EQ(scan->processes[2].start_time, 0u);  // exited before its stat was read: unknown
}

TEST(ParseScanTest, MalformedStartRecordIsAnError) {
  for (const char* bad : {"5\n", "5 x\n", "5 -1\n", "5 1 2\n"}) {
    auto scan = parse_scan(std::string("TPURUN-SCAN 1\ncaller 1001 alice\npriv root\nbegin start\n") + bad +
                           "end start\nlock 0\nlogs 0\ndenied 0\nend\n");
    ASSERT_FALSE(scan) << bad;
    EXPECT_NE(scan.error().find("malformed 'start' record"), std::string::npos) << scan.error();
  }
}

}  // namespace
}  // namespace tpurun
