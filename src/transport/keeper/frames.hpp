#pragma once
// The keeper's wire format on its Unix socket (docs/keeper.md): frames of
// [type: 1 byte][length: 4 bytes, big-endian][payload]. Every payload is
// [json length: 4 bytes][a JSON object][raw bytes], so control fields and
// a command's output travel in one frame with no escaping.
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tpurun::keeper {

enum class FrameType : std::uint8_t {
  hello = 1,    // keeper → client, first: {version, pid}
  open,         // client → keeper: {settings, worker, idle_ms}: lease a session to that worker
  ready,        // the session is there (keeper → client)
  error,        // {kind, message}: a TransportError
  run,          // {command_line, timeout_ms} + stdin bytes
  out,          // raw stdout bytes of a run
  err,          // raw stderr bytes of a run
  exit,         // {code, signal?}: a run ended
  cancel,       // client → keeper: Ctrl-C (a run), or stop the write (a stream)
  ping,         // keeper → client: still working on it
  open_exec,    // {command_line}
  open_stream,  // {host, port}
  opened,       // {id}
  s_write,      // {id} + bytes
  s_read,       // {id, wait_ms}
  s_data,       // {eof} + bytes
  s_close_input,  // {id}
  s_err,        // {id} → done {text}
  s_exit,       // {id} → done {code|null}
  s_free,       // {id}
  done,         // an answer with nothing more in it, or {text}/{code}
  status,       // client → keeper: → done {sessions: [...]}
  stop,         // client → keeper: close every session and exit → done {closed}
};

struct Frame {
  FrameType type = FrameType::done;
  nlohmann::json head = nlohmann::json::object();
  std::string data;
};

// Frames larger than this are a protocol error (the biggest real one is a
// push's 64 KiB piece or a manifest, far below it).
constexpr std::uint32_t kMaxFrame = 64u << 20;

// Writes whole frames; many threads may write to one fd through one writer.
class FrameWriter {
 public:
  explicit FrameWriter(int fd) : fd_(fd) {}
  // False when the peer is gone (EPIPE, never SIGPIPE) or the fd broke.
  bool send(FrameType type, const nlohmann::json& head = nlohmann::json::object(), std::string_view data = {});

 private:
  int fd_;
  std::mutex mu_;
};

enum class ReadStatus { ok, eof, timeout, error };

// Reads frames from an fd, buffering what arrives early.
class FrameReader {
 public:
  explicit FrameReader(int fd) : fd_(fd) {}
  // Waits up to `wait_ms` (-1: without end) for the next whole frame.
  ReadStatus next(Frame& frame, int wait_ms);

 private:
  bool take(Frame& frame);  // a whole frame from the buffer, if there is one
  int fd_;
  std::string buffer_;
  bool broken_ = false;
};

}  // namespace tpurun::keeper
