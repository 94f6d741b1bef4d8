#pragma once
// The programs tpurun runs on the workers: the files of worker/, embedded at
// build time (worker/embed.cmake writes their definitions into the build
// dir), with their shared pieces and their tokens (worker/protocol.tokens,
// tpurun/worker/tokens.hpp) in place. docs/protocols.md says what each one
// reads and answers, and who runs it as which user. tpurun sends a program on
// its stdin, never in an argv.
#include <string_view>

namespace tpurun::worker {

// POSIX sh, run by `sh -s` (the program on stdin).
extern const std::string_view kScanSh;             // who holds the TPU (tpu/scan.hpp)
extern const std::string_view kKillSh;             // kill's signals (tpu/kill.hpp)
extern const std::string_view kCleanSh;            // a stale libtpu lock removed (tpu/kill.hpp)
extern const std::string_view kProfileListenerSh;  // who serves the profiler port (tpu/profile.hpp)
extern const std::string_view kDoctorProbeSh;      // doctor's facts (doctor/doctor.hpp)
extern const std::string_view kReserveSh;          // a worker's reservation (runs/launch/reservation.hpp)
extern const std::string_view kLaunchSh;           // a job started detached (runs/launch/launch.hpp)
extern const std::string_view kPushHaveSh;         // whether a snapshot is there (staging/push.hpp)

// python3, run by transport/shell_quote's python3_command (the program on stdin).
extern const std::string_view kPushPy;       // a snapshot pushed (staging/push.hpp)
extern const std::string_view kWorkerGcPy;   // gc there (staging/worker_gc.hpp)
extern const std::string_view kLogMirrorPy;  // a run's files mirrored (runs/watcher/log_mirror.hpp)
extern const std::string_view kStacksPy;     // a run's Python stacks taken (runs/stacks/stacks.hpp)

// Every token defined in each language, as the programs get them (the
// protocol test checks them against tokens.hpp).
extern const std::string_view kTokensSh;
extern const std::string_view kTokensPy;
extern const std::string_view kTokensPl;

}  // namespace tpurun::worker
