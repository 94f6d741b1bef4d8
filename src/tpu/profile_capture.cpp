// capture_profiles: every worker ready first, then one start time for all.
//
// The start time is chosen only once every worker's connection is made, its
// port checked and its stream open, so it needs to be ahead by no more than
// what one request takes to reach a server (lead_ms), however long the SSH
// handshakes took; and the calls all go at once, on one thread per worker
// (not limited by --fanout: a call waits out the whole trace, and a worker
// whose call went late would start late).
#include <fmt/format.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/tpu/profile.hpp"

namespace tpurun {
namespace {

// The server writes the trace after tracing; on a slow shared mount that
// takes a while, so the call's deadline leaves room beyond the trace.
constexpr long long kWriteAllowanceMs = 30000;

uint64_t system_now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// A worker between the two phases: its connection and stream, or its outcome already.
struct Ready {
  std::unique_ptr<Connection> connection;
  std::unique_ptr<ByteStream> stream;
  std::optional<ProfileOutcome> outcome;
};

std::optional<ProfileOutcome> judge_listener(const PortListener& l, const std::string& run_id) {
  if (!l.listening) {
    return NoProfilerServer{""};
  }
  if (!l.mine) return NotThisRunsServer{fmt::format("{}'s process", l.user)};
  if (!l.run_id.empty() && !run_id.empty() && l.run_id != run_id) {
    return NotThisRunsServer{
        fmt::format("your process {}of run {}", l.pid ? std::to_string(*l.pid) + " " : "", l.run_id)};
  }
  return std::nullopt;
}

Ready get_ready(const Worker& worker, Transport& transport, const ProfileRequestPlan& plan,
                const CancelToken& cancel) {
  Ready r;
  auto connection = transport.connect(worker, cancel);
  if (!connection) {
    r.outcome = ProfileFailed{connection.error().message, connection.error().kind, std::nullopt};
    return r;
  }
  r.connection = std::move(*connection);
  CaptureSink sink;
  auto ran = r.connection->run(build_listener_command(plan.port), sink, cancel);
  if (!ran) {
    r.outcome = ProfileFailed{"checking the port: " + ran.error().message, ran.error().kind, std::nullopt};
    return r;
  }
  auto listener = parse_listener(sink.out);
  if (!listener) {
    r.outcome = ProfileFailed{listener.error() + (sink.err.empty() ? "" : "; " + sink.err), std::nullopt,
                              std::nullopt};
    return r;
  }
  if ((r.outcome = judge_listener(*listener, plan.run_id))) return r;
  auto stream = r.connection->open_stream("localhost", plan.port, cancel);
  if (!stream) {
    if (stream.error().kind == ErrorKind::refused) {
      r.outcome = NoProfilerServer{stream.error().message};
    } else {
      r.outcome = ProfileFailed{stream.error().message, stream.error().kind, std::nullopt};
    }
    return r;
  }
  r.stream = std::move(*stream);
  return r;
}

ProfileOutcome call_profile(Ready& r, const Worker& worker, const std::string& host_name,
                            const ProfileRequestPlan& plan, const ProfileSettings& settings,
                            const CancelToken& cancel) {
  GrpcOptions options;
  options.authority = fmt::format("localhost:{}", plan.port);
  options.deadline_ms = static_cast<int>(plan.lead_ms + plan.delay_ms + static_cast<long long>(settings.duration_ms) +
                                         kWriteAllowanceMs);
  auto replies =
      grpc_unary_calls(*r.stream, {{kProfileMethod, encode_profile_request(settings, host_name)}}, options, cancel);
  if (!replies) return ProfileFailed{replies.error().message, replies.error().kind, std::nullopt};
  const GrpcReply& reply = replies->front();
  if (reply.status.code == GrpcCode::deadline_exceeded) return ProfileTimedOut{options.deadline_ms};
  if (!reply.status.ok()) {
    return ProfileFailed{fmt::format("{}: {}", grpc_code_name(reply.status.code), reply.status.message),
                         std::nullopt, reply.status.code};
  }
  auto response = decode_profile_response(reply.response);
  if (!response) return ProfileFailed{response.error(), std::nullopt, std::nullopt};
  TraceWritten written;
  written.path = trace_path(settings, host_name);
  written.empty_trace = response->empty_trace;
  TraceCopy copy = plan.fetch ? plan.fetch(worker, *r.connection, written.path) : TraceCopy{};
  written.bytes = copy.bytes;
  written.note = copy.note;
  return written;
}

}  // namespace

TraceCopy stat_trace_here(const Worker&, Connection&, const std::string& path) {
  // On NFS, opening a directory revalidates it (close-to-open), so the
  // session dir and the file another host made since are found, not a cached
  // "no such file" (new_session_id looked the session dir up before).
  const std::string session_dir = path.substr(0, path.rfind('/'));
  for (const std::string& dir : {session_dir.substr(0, session_dir.rfind('/')), session_dir}) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return {static_cast<uint64_t>(st.st_size), ""};
  return {std::nullopt, "written on the worker; not seen on this host (no shared mount?)"};
}

std::vector<WorkerProfile> capture_profiles(const std::vector<Worker>& workers, Transport& transport,
                                            ProfileRequestPlan& plan, const CancelToken& cancel) {
  if (!plan.now_ns) plan.now_ns = system_now_ns;
  std::vector<Ready> ready(workers.size());
  run_parallel(workers.size(), plan.fanout,
               [&](size_t i) { ready[i] = get_ready(workers[i], transport, plan, cancel); });

  plan.settings.start_timestamp_ns =
      plan.now_ns() + static_cast<uint64_t>(plan.lead_ms + plan.delay_ms) * 1000000ULL;
  const ProfileSettings& settings = plan.settings;
  std::vector<WorkerProfile> profiles(workers.size());
  run_parallel(workers.size(), static_cast<int>(std::max<size_t>(workers.size(), 1)), [&](size_t i) {
    WorkerProfile& p = profiles[i];
    p.worker = workers[i];
    p.host_name = profile_host_name(workers[i]);
    if (ready[i].outcome) {
      p.outcome = *ready[i].outcome;
    } else if (cancel.cancelled()) {
      p.outcome = ProfileFailed{"interrupted before the call", ErrorKind::interrupted, std::nullopt};
    } else {
      p.outcome = call_profile(ready[i], workers[i], p.host_name, plan, settings, cancel);
    }
    ready[i].stream.reset();  // the stream before its connection
    ready[i].connection.reset();
  });
  return profiles;
}

int profile_exit_code(const std::vector<WorkerProfile>& profiles, bool cancelled) {
  if (cancelled) return 130;
  int code = 0;
  for (const WorkerProfile& p : profiles) {
    if (const auto* failed = std::get_if<ProfileFailed>(&p.outcome)) {
      if (failed->transport && (*failed->transport == ErrorKind::connect || *failed->transport == ErrorKind::auth ||
                                *failed->transport == ErrorKind::hostkey || *failed->transport == ErrorKind::timeout)) {
        return 255;
      }
      code = std::max(code, 1);
    } else if (std::holds_alternative<ProfileTimedOut>(p.outcome)) {
      code = 124;
    } else if (!std::holds_alternative<TraceWritten>(p.outcome)) {
      code = std::max(code, 1);
    }
  }
  return code;
}

}  // namespace tpurun
