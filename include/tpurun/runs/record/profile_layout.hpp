#pragma once
// Where a run's profiles go: <log dir>/plugins/profile/<session>/<host>.xplane.pb,
// the layout TensorBoard's profile plugin reads (docs/profile.md). The profiler
// servers write the files themselves; tpurun names the root and the session
// (and with no shared mount, copies each worker's file here).
#include <chrono>
#include <string>
#include <vector>

#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/tpu/profile.hpp"

namespace tpurun {

// <log dir>/plugins/profile: the repository_root every worker's call carries.
std::string profile_root(const std::string& log_dir);

// A new session's id: the time as YYYY_MM_DD_HH_MM_SS (UTC; tsl's client uses
// the local time in this shape), with _2, _3, ... when <root>/<id> is taken.
std::string new_session_id(std::chrono::system_clock::time_point now, const std::string& root);

// The run's sessions, oldest first (empty when it has none).
std::vector<std::string> profile_sessions(const std::string& log_dir);

// No shared mount: each server writes its trace on its worker's disk, under
// the run's dir there; this fetch copies it into the run's log dir here.
TraceFetch fetch_trace_into(const RunRecord& run);

}  // namespace tpurun
