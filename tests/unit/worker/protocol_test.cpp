// Both sides of the worker protocols spell each token alike (docs/protocols.md):
// the C++ constants (tpurun/worker/tokens.hpp) are what the sh, python3 and
// perl programs define, and neither side writes a token out by hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tpurun/util/subprocess.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

namespace fs = std::filesystem;

// Every token with its C++ constant. A token added to worker/protocol.tokens
// and not here fails EveryTokenIsChecked.
const std::vector<std::pair<std::string, std::string>>& cpp_tokens() {
  using namespace worker;
  static const std::vector<std::pair<std::string, std::string>> tokens = {
      {"SCAN_HEADER", kScanHeader},
      {"KILL_HEADER", kKillHeader},
      {"CLEAN_HEADER", kCleanHeader},
      {"RESERVE_OK", kReserveOk},
      {"RESERVE_BUSY", kReserveBusy},
      {"RESERVE_REFUSED", kReserveRefused},
      {"RESERVE_HOLDER", kReserveHolder},
      {"RESERVE_READY", kReserveReady},
      {"RESERVE_DONE", kReserveDone},
      {"RESERVE_GO", kReserveGo},
      {"RESERVE_KEEPALIVE", kReserveKeepalive},
      {"RESERVE_RUN", kReserveRun},
      {"RESERVE_END_OF_COMMAND", kReserveEndOfCommand},
      {"LAUNCHED", kLaunched},
      {"LAUNCH_LOG_DIR_UNSAFE", std::to_string(kLaunchLogDirUnsafe)},
      {"LAUNCH_NOT_STARTED", std::to_string(kLaunchNotStarted)},
      {"LAUNCH_NO_SETSID", std::to_string(kLaunchNoSetsid)},
      {"LAUNCH_NO_SNAPSHOT", std::to_string(kLaunchNoSnapshot)},
      {"LAUNCH_NO_LOG_DIR", std::to_string(kLaunchNoLogDir)},
      {"WRAPPER_REFUSED", kWrapperRefused},
      {"PUSH_HAVE", kPushHave},
      {"PUSH_NEED", kPushNeed},
      {"PUSH_MISSING", kPushMissing},
      {"PUSH_NOSPACE", kPushNospace},
      {"PUSH_ERROR", kPushError},
      {"PUSH_MANIFEST", kPushManifest},
      {"PUSH_END", kPushEnd},
      {"MIRROR_APPEND", kMirrorAppend},
      {"MIRROR_WHOLE", kMirrorWhole},
      {"MIRROR_SPACE", kMirrorSpace},
      {"MIRROR_END", kMirrorEnd},
      {"MIRROR_QUIT", kMirrorQuit},
      {"LOG_TMP_DIR", kLogTmpDir},
      {"RESERVATION_LOCK", kReservationLock},
      {"LIBTPU_LOCKFILE", kLibtpuLockfile},
      {"TPU_LOGS_DIR", kTpuLogsDir},
      {"RUN_ID_VARIABLE", kRunIdVariable},
      {"STACKS_SIGNAL_OFFSET", std::to_string(kStacksSignalOffset)},
      {"STACKS_DIR_VARIABLE", kStacksDirVariable},
      {"STACKS_HEADER", kStacksHeader},
  };
  return tokens;
}

// What a program prints: `definitions` (a language's tokens), then one
// line per token, its value as that language sees it.
std::vector<std::string> values_in(const std::vector<std::string>& argv, const std::string& program) {
  CaptureSink sink;
  auto ran = run_subprocess(argv, program, std::nullopt, sink, CancelToken());
  EXPECT_TRUE(ran.ok() && ran->code == 0) << argv[0] << ": " << sink.err;
  std::vector<std::string> lines;
  std::istringstream in(sink.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> cpp_values() {
  std::vector<std::string> values;
  for (const auto& [name, value] : cpp_tokens()) values.push_back(value);
  return values;
}

TEST(WorkerProtocolTest, EveryTokenIsChecked) {
  size_t defined = 0;
  std::istringstream in{std::string(worker::kTokensSh)};
  for (std::string line; std::getline(in, line);) defined += line.find('=') != std::string::npos;
  EXPECT_EQ(defined, cpp_tokens().size()) << "a token of worker/protocol.tokens is missing from cpp_tokens()";
}

TEST(WorkerProtocolTest, ShellProgramsSeeTheTokensOfTheCxxSide) {
  std::string program(worker::kTokensSh);
  for (const auto& [name, value] : cpp_tokens()) program += "printf '%s\\n' \"$" + name + "\"\n";
  EXPECT_EQ(values_in({"/bin/sh", "-s"}, program), cpp_values());
}

TEST(WorkerProtocolTest, PythonProgramsSeeTheTokensOfTheCxxSide) {
  std::string program(worker::kTokensPy);
  for (const auto& [name, value] : cpp_tokens()) program += "print(" + name + ")\n";
  EXPECT_EQ(values_in({"/usr/bin/python3", "-I", "-S", "-"}, program), cpp_values());
}

TEST(WorkerProtocolTest, PerlProgramsSeeTheTokensOfTheCxxSide) {
  std::string program = "use strict; use warnings;\n" + std::string(worker::kTokensPl);
  for (const auto& [name, value] : cpp_tokens()) program += "print \"$" + name + "\\n\";\n";
  EXPECT_EQ(values_in({"perl", "-"}, program), cpp_values());
}

// The programs as sent, without their token definitions: no protocol word
// written out by hand (each comes from its token).
TEST(WorkerProtocolTest, NoProgramSpellsAProtocolWordOfItsOwn) {
  const std::regex definition(R"(^\s*(my \$)?[A-Z][A-Z0-9_]* ?= ?['"][^'"]*['"];?$)");
  for (const auto& [name, text] : std::vector<std::pair<const char*, std::string_view>>{
           {"scan.sh", worker::kScanSh}, {"kill.sh", worker::kKillSh}, {"clean.sh", worker::kCleanSh},
           {"profile_listener.sh", worker::kProfileListenerSh}, {"doctor_probe.sh", worker::kDoctorProbeSh},
           {"reserve.sh", worker::kReserveSh}, {"launch.sh", worker::kLaunchSh},
           {"push_have.sh", worker::kPushHaveSh}, {"push.py", worker::kPushPy},
           {"worker_gc.py", worker::kWorkerGcPy}, {"log_mirror.py", worker::kLogMirrorPy},
           {"stacks.py", worker::kStacksPy}}) {
    std::istringstream in{std::string(text)};
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (std::regex_match(line, definition)) continue;
      for (const auto& [token, value] : cpp_tokens()) {
        if (value.size() < 6) continue;  // short words ("go", "M", "END") are also ordinary words
        EXPECT_EQ(line.find(value), std::string::npos) << "worker/" << name << ":" << n << " spells " << token
                                                       << " (" << value << "): " << line;
      }
    }
  }
}

// The C++ side: the protocol words and the worker paths are only in
// tokens.hpp (generated from worker/protocol.tokens), never a literal of src/.
TEST(WorkerProtocolTest, NoSourceSpellsAProtocolWordOfItsOwn) {
  const char* root = std::getenv("TPURUN_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "TPURUN_SOURCE_DIR is not set (ctest sets it)";
  std::vector<std::string> words = {"\"TPURUN-"};
  for (const auto& [token, value] : cpp_tokens()) {
    if (value.front() == '/') words.push_back("\"" + value);  // a worker path
  }
  for (const char* dir : {"src", "include"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(root) / dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        for (const std::string& word : words) {
          EXPECT_EQ(line.find(word), std::string::npos)
              << entry.path().string() << ":" << n << " spells " << word << " (worker/protocol.tokens has it)";
        }
      }
    }
  }
}

}  // namespace
}  // namespace tpurun
