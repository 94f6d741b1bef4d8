#pragma once
// One profile of every worker at once (`tpurun profile`, docs/profile.md):
// the profiler server a JAX job starts with jax.profiler.start_server(PORT)
// serves tensorflow.ProfilerService/Profile (proto/profiler_service.proto,
// the project's own); tpurun calls it on every worker through the worker's
// SSH session (as `top` reaches libtpu's metrics), with one session id and
// one start time, and the server writes its trace itself, on its own file
// system, to repository_root/session_id/host_name.xplane.pb.
//
// profile_proto: the messages, by field number (tpu/protobuf_wire);
// profile_listener: who serves the port on the worker, asked before calling;
// profile_capture: the calls on every worker, one outcome each.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tpurun/pod/worker.hpp"
#include "tpurun/transport/grpc_call.hpp"
#include "tpurun/transport/outcome.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"

namespace tpurun {

inline constexpr const char* kProfileMethod = "/tensorflow.ProfilerService/Profile";
inline constexpr int kDefaultProfilerPort = 9999;
// The line a JAX job needs for `tpurun profile` to find a server.
inline constexpr const char* kStartServerLine = "jax.profiler.start_server({})";

// ---- the messages

// What every worker's call carries (all but the host name).
struct ProfileSettings {
  std::string repository_root;  // <log dir>/plugins/profile: where TensorBoard's profile plugin looks
  std::string session_id;       // one for every worker: the traces land in one session dir
  uint64_t start_timestamp_ns = 0;  // one for every worker, a moment ahead: the traces line up
  uint64_t duration_ms = 2000;
  // tsl's defaults (ProfilerSession::DefaultOptions): host 2, device 1, python 0.
  uint32_t host_tracer_level = 2;
  uint32_t device_tracer_level = 1;
  uint32_t python_tracer_level = 0;
};

// ProfileRequest for one host, serialized as the protobuf runtime would
// (fields in number order): version 1, so that the server honours the start
// time and the levels.
std::string encode_profile_request(const ProfileSettings& settings, std::string_view host_name);

struct ProfileResponse {
  bool empty_trace = false;
  std::vector<std::string> tool_data_names;  // an older server's inline data (not written by it)
};
Result<ProfileResponse, std::string> decode_profile_response(std::string_view bytes);

// Where the server writes a host's trace (tsl save_profile.cc: ':' in the
// host name written as '_').
std::string trace_path(const ProfileSettings& settings, std::string_view host_name);

// ---- who listens on the port (before any call: a profile never reaches
// another user's server, nor a job of another run)

struct PortListener {
  bool listening = false;
  int uid = -1;
  std::string user;           // the listener's owner
  bool mine = false;          // owned by the user tpurun logs in as
  std::optional<int> pid;     // when mine: the process holding the socket
  std::string run_id;         // when mine: that process's TPURUN_RUN_ID, "" when it has none
};

// worker/profile_listener.sh, which answers for PORT (reads /proc/net/tcp{,6}, and for
// one's own listener, /proc/*/fd and its environ), and its answer parsed.
RemoteCommand build_listener_command(int port);
Result<PortListener, std::string> parse_listener(std::string_view out);

// ---- one outcome per worker

struct TraceWritten {
  std::string path;                // on the worker's file system
  std::optional<uint64_t> bytes;   // when this host sees the file (a shared mount, or fetched)
  bool empty_trace = false;
  std::string note;                // why the size is unknown, when it is
};
// Nothing listens on the port: the job started no profiler server.
struct NoProfilerServer {
  std::string detail;  // "" when the port check found no listener
};
// Something listens, but it is not this run's job: it is not asked.
struct NotThisRunsServer {
  std::string owner;  // "bob's process", "your process 4242 of run X"
};
struct ProfileFailed {
  std::string message;
  std::optional<ErrorKind> transport;  // the SSH side failed (connect: unreachable)
  std::optional<GrpcCode> grpc;        // the server answered with this status
};
struct ProfileTimedOut {
  long long waited_ms = 0;
};
using ProfileOutcome = std::variant<TraceWritten, NoProfilerServer, NotThisRunsServer, ProfileFailed, ProfileTimedOut>;

struct WorkerProfile {
  Worker worker;
  std::string host_name;  // the trace's name: "w3", "w5-s1w1"
  ProfileOutcome outcome;
};

// The host name a worker's trace gets: its name, with '-' for the space.
std::string profile_host_name(const Worker& worker);

// For a worker's written trace: its size as this host sees it, or why not.
// The default stats the path here (a shared mount); a pod without one hands
// in a function that copies the file from the worker into the run's log dir.
struct TraceCopy {
  std::optional<uint64_t> bytes;
  std::string note;
};
using TraceFetch = std::function<TraceCopy(const Worker& worker, Connection& connection, const std::string& path)>;
TraceCopy stat_trace_here(const Worker& worker, Connection& connection, const std::string& path);

struct ProfileRequestPlan {
  ProfileSettings settings;  // start_timestamp_ns is set by capture_profiles
  int port = kDefaultProfilerPort;
  std::string run_id;        // the listener's TPURUN_RUN_ID must be this (or none)
  long long delay_ms = 0;    // the start, after every worker is ready
  long long lead_ms = 300;   // margin for the calls to reach every server before the start
  int fanout = 64;           // connections made at once (the calls themselves all go at once)
  TraceFetch fetch = stat_trace_here;
  std::function<uint64_t()> now_ns;  // the clock (default: the system's)
};

// Every worker: connect and ask who listens (at most `fanout` at once); then,
// with every worker ready, one start time (now + lead + delay) and every call
// at once. Results in worker order; plan.settings.start_timestamp_ns says
// the start time the calls carried.
std::vector<WorkerProfile> capture_profiles(const std::vector<Worker>& workers, Transport& transport,
                                            ProfileRequestPlan& plan, const CancelToken& cancel);

// 0 when every trace was written; 1 when a worker has no server, another's,
// or the call failed; 124 when a call timed out (and nothing worse); 255 when
// a worker could not be reached; 130 after Ctrl-C.
int profile_exit_code(const std::vector<WorkerProfile>& profiles, bool cancelled);

}  // namespace tpurun
