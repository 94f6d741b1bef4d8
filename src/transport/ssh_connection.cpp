#include "transport/ssh_connection.hpp"

#include <libssh/callbacks.h>
#include <libssh/server.h>  // ssh_send_keepalive, which clients may use too

#include <chrono>
#include <cstring>
#include <fmt/format.h>

#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::steady_clock;

// Channel state filled in by libssh callbacks while the event loop runs.
struct ChannelState {
  OutputSink* sink = nullptr;
  Clock::time_point last_heard = Clock::now();
  bool closed = false;
  bool have_status = false;
  int exit_status = 0;
  std::string exit_signal;
};

int on_data(ssh_session, ssh_channel, void* data, uint32_t len, int is_stderr, void* user) {
  auto* state = static_cast<ChannelState*>(user);
  state->last_heard = Clock::now();
  state->sink->write(is_stderr ? Stream::err : Stream::out,
                     std::string_view(static_cast<const char*>(data), len));
  return static_cast<int>(len);
}

void on_exit_status(ssh_session, ssh_channel, int status, void* user) {
  auto* state = static_cast<ChannelState*>(user);
  state->have_status = true;
  state->exit_status = status;
}

void on_exit_signal(ssh_session, ssh_channel, const char* signal, int, const char*, const char*,
                    void* user) {
  auto* state = static_cast<ChannelState*>(user);
  state->exit_signal = signal ? signal : "?";
}

void on_close(ssh_session, ssh_channel, void* user) { static_cast<ChannelState*>(user)->closed = true; }

TransportError channel_error(const Worker& worker, ssh_session session, const char* what) {
  return {ErrorKind::channel,
          fmt::format("{}: {} — the worker may have rebooted or dropped the connection",
                      what, ssh_get_error(session))};
  (void)worker;
}

// Ctrl-C: ask the command to stop the way a terminal would, then harder, then
// give up on the channel (a timeout starts at TERM and ends with KILL).
// Returns true once the channel should be abandoned.
bool escalate(ssh_channel channel, Clock::time_point since, int& stage, bool timeout) {
  const auto waited = Clock::now() - since;
  if (stage == 0) {
    ssh_channel_request_send_signal(channel, timeout ? "TERM" : "INT");
    stage = 1;
  } else if (stage == 1 && waited > std::chrono::seconds(timeout ? 2 : 1)) {
    ssh_channel_request_send_signal(channel, timeout ? "KILL" : "TERM");
    stage = 2;
  } else if (stage == 2 && waited > std::chrono::seconds(4)) {
    return true;
  }
  return false;
}

// SSH keepalives (keepalive@openssh.com with want_reply): a worker whose
// processes are stopped still ACKs at the TCP level, so only a reply from sshd
// proves it is alive. libssh waits for the reply inside ssh_send_keepalive for
// at most the session timeout and does not say whether it came, so a call
// that used up that whole wait counts as a missed reply.
class KeepaliveProbe {
 public:
  static constexpr auto kIdle = std::chrono::seconds(10);  // silence before the first probe
  static constexpr long kWaitS = 5;                        // per probe
  static constexpr int kMisses = 3;                        // ~25s of silence, then lost

  // Returns false once the worker has missed kMisses replies in a row.
  bool check(ssh_session session, ChannelState& state) {
    const auto now = Clock::now();
    if (now - state.last_heard < kIdle) {
      misses_ = 0;
      return true;
    }
    if (now - last_probe_ < std::chrono::seconds(1)) return true;
    long wait = kWaitS;
    ssh_options_set(session, SSH_OPTIONS_TIMEOUT, &wait);
    const auto start = Clock::now();
    ssh_send_keepalive(session);
    last_probe_ = Clock::now();
    if (last_probe_ - start >= std::chrono::milliseconds(kWaitS * 1000 - 300)) {
      ++misses_;
    } else {
      misses_ = 0;
      state.last_heard = last_probe_;
    }
    return misses_ < kMisses;
  }

 private:
  int misses_ = 0;
  Clock::time_point last_probe_{};
};

}  // namespace

bool SshConnection::answers_within(long wait_ms, long restore_s) {
  if (!ssh_is_connected(session_)) return false;
  // libssh's wait is TIMEOUT seconds plus TIMEOUT_USEC microseconds.
  long seconds = 0;
  long usec = wait_ms * 1000;
  ssh_options_set(session_, SSH_OPTIONS_TIMEOUT, &seconds);
  ssh_options_set(session_, SSH_OPTIONS_TIMEOUT_USEC, &usec);
  const auto start = Clock::now();
  const int rc = ssh_send_keepalive(session_);
  const auto took = Clock::now() - start;
  usec = 0;
  ssh_options_set(session_, SSH_OPTIONS_TIMEOUT_USEC, &usec);
  ssh_options_set(session_, SSH_OPTIONS_TIMEOUT, &restore_s);
  return rc == SSH_OK && ssh_is_connected(session_) && took < std::chrono::milliseconds(wait_ms * 9 / 10);
}

SshConnection::~SshConnection() {
  ssh_disconnect(session_);
  ssh_free(session_);
}

Result<CommandExit, TransportError> SshConnection::run(const RemoteCommand& command,
                                                       OutputSink& sink, const CancelToken& cancel) {
  ssh_channel channel = ssh_channel_new(session_);
  if (channel == nullptr) return unexpected(channel_error(worker_, session_, "cannot open channel"));
  struct ChannelGuard {
    ssh_channel c;
    ~ChannelGuard() { ssh_channel_free(c); }
  } guard{channel};

  if (ssh_channel_open_session(channel) != SSH_OK) {
    return unexpected(channel_error(worker_, session_, "cannot open session channel"));
  }
  ChannelState state;
  state.sink = &sink;
  ssh_channel_callbacks_struct callbacks{};
  callbacks.userdata = &state;
  callbacks.channel_data_function = on_data;
  callbacks.channel_exit_status_function = on_exit_status;
  callbacks.channel_exit_signal_function = on_exit_signal;
  callbacks.channel_close_function = on_close;
  ssh_callbacks_init(&callbacks);
  ssh_set_channel_callbacks(channel, &callbacks);

  if (ssh_channel_request_exec(channel, command.command_line.c_str()) != SSH_OK) {
    return unexpected(channel_error(worker_, session_, "exec request failed"));
  }
  // The command always sees EOF on stdin, like `ssh -n`, after any data we send.
  size_t sent = 0;
  while (sent < command.stdin_data.size()) {
    int n = ssh_channel_write(channel, command.stdin_data.data() + sent,
                              static_cast<uint32_t>(command.stdin_data.size() - sent));
    if (n < 0) return unexpected(channel_error(worker_, session_, "sending stdin failed"));
    sent += static_cast<size_t>(n);
  }
  ssh_channel_send_eof(channel);

  ssh_event event = ssh_event_new();
  ssh_event_add_session(event, session_);
  bool lost = false;
  bool frozen = false;
  bool interrupted = false;
  bool timed_out = false;
  int stage = 0;
  Clock::time_point cancel_at{};
  const auto started = Clock::now();
  KeepaliveProbe keepalive;
  while (!state.closed && !ssh_channel_is_closed(channel)) {
    if (ssh_event_dopoll(event, 200) == SSH_ERROR || !ssh_is_connected(session_)) {
      lost = true;
      break;
    }
    if (!interrupted && !timed_out && !keepalive.check(session_, state)) {
      frozen = true;
      break;
    }
    if (!interrupted && !timed_out && command.timeout_ms > 0 &&
        Clock::now() - started > std::chrono::milliseconds(command.timeout_ms)) {
      timed_out = true;
      cancel_at = Clock::now();
    }
    if (!timed_out && cancel.cancelled()) {
      if (!interrupted) cancel_at = Clock::now();
      interrupted = true;
    }
    if ((interrupted || timed_out) && escalate(channel, cancel_at, stage, timed_out)) break;
  }
  ssh_event_remove_session(event, session_);
  ssh_event_free(event);
  ssh_remove_channel_callbacks(channel, &callbacks);

  if (frozen) {
    return unexpected(TransportError{
        ErrorKind::timeout,
        fmt::format("the worker stopped answering mid-command (no reply to {} SSH keepalives) — it may be "
                    "frozen, overloaded or cut off",
                    KeepaliveProbe::kMisses)});
  }
  if (timed_out && !state.have_status && state.exit_signal.empty()) {
    ssh_channel_close(channel);
    return unexpected(TransportError{
        ErrorKind::deadline, fmt::format("timed out after {}; the command was sent SIGTERM, then SIGKILL",
                                        format_duration_ms(command.timeout_ms))});
  }
  if (timed_out) {
    return unexpected(TransportError{
        ErrorKind::deadline,
        fmt::format("timed out after {}; the command was stopped{}", format_duration_ms(command.timeout_ms),
                    state.exit_signal.empty() ? "" : " (SIG" + state.exit_signal + ")")});
  }
  if (interrupted) {
    ssh_channel_close(channel);
    return unexpected(TransportError{ErrorKind::interrupted,
                                     interrupted_by() + "; the command was sent SIGINT/SIGTERM"});
  }
  if (lost && !state.have_status && state.exit_signal.empty()) {
    return unexpected(channel_error(worker_, session_, "connection lost mid-command"));
  }
  if (!state.exit_signal.empty()) {
    int number = signal_number(state.exit_signal);
    return CommandExit{128 + number, state.exit_signal};
  }
  if (!state.have_status) {
    return unexpected(TransportError{ErrorKind::channel, "the command ended without an exit status"});
  }
  return CommandExit{state.exit_status, std::nullopt};
}

}  // namespace tpurun
