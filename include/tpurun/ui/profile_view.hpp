#pragma once
// How `tpurun profile` reports a capture: one line per worker (the trace and
// its size, or why there is none, with what to do), a closing line, and the
// --json form.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tpurun/tpu/profile.hpp"

namespace tpurun {

struct ProfileReport {
  std::string run_id;
  int port = kDefaultProfilerPort;
  ProfileSettings settings;  // with the start time the calls carried
  std::vector<WorkerProfile> workers;
};

// "w0 127.0.1.1  trace written, 14.2 KiB: <path>", "w3 127.0.1.4  no profiler
// server on port 9999 (nothing listens on port 9999): the job must call
// jax.profiler.start_server(9999)", ...
std::string format_profile_line(const WorkerProfile& profile, int port);

// Every worker's line, then "3 of 4 workers traced into session S of run R"
// and where to look at it.
std::string format_profile_report(const ProfileReport& report);

// {"run_id", "session_id", "repository_root", "start_timestamp_ns",
// "duration_ms", "port", "workers": [{worker, host, host_name,
// "outcome": "written"|"no_server"|"not_this_run"|"failed"|"timed_out",
// path, bytes, empty_trace, message}]}
nlohmann::json profile_report_to_json(const ProfileReport& report);

}  // namespace tpurun
