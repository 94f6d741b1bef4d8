#include "transport/keeper/frames.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace tpurun::keeper {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

std::uint32_t get_u32(std::string_view in) {
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

bool FrameWriter::send(FrameType type, const nlohmann::json& head, std::string_view data) {
  const std::string text = head.dump();
  std::string frame;
  frame.reserve(9 + text.size() + data.size());
  frame.push_back(static_cast<char>(type));
  put_u32(frame, static_cast<std::uint32_t>(4 + text.size() + data.size()));
  put_u32(frame, static_cast<std::uint32_t>(text.size()));
  frame += text;
  frame.append(data);
  std::lock_guard lock(mu_);
  std::string_view rest = frame;
  while (!rest.empty()) {
    const ssize_t n = ::send(fd_, rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    rest.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool FrameReader::take(Frame& frame) {
  if (buffer_.size() < 5) return false;
  const std::uint32_t length = get_u32(std::string_view(buffer_).substr(1, 4));
  if (length > kMaxFrame || length < 4) {
    broken_ = true;
    return false;
  }
  if (buffer_.size() < 5 + length) return false;
  std::string_view payload = std::string_view(buffer_).substr(5, length);
  const std::uint32_t head_length = get_u32(payload);
  if (head_length > length - 4) {
    broken_ = true;
    return false;
  }
  frame.type = static_cast<FrameType>(static_cast<unsigned char>(buffer_[0]));
  frame.head = nlohmann::json::parse(payload.substr(4, head_length), nullptr, false);
  if (frame.head.is_discarded() || !frame.head.is_object()) {
    broken_ = true;
    return false;
  }
  frame.data.assign(payload.substr(4 + head_length));
  buffer_.erase(0, 5 + length);
  return true;
}

ReadStatus FrameReader::next(Frame& frame, int wait_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(wait_ms < 0 ? 0 : wait_ms);
  while (true) {
    if (take(frame)) return ReadStatus::ok;
    if (broken_) return ReadStatus::error;
    int left = -1;
    if (wait_ms >= 0) {
      left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
      if (left < 0) left = 0;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, left);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return ReadStatus::error;
    if (ready == 0) return ReadStatus::timeout;
    char chunk[65536];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return ReadStatus::error;
    if (n == 0) return ReadStatus::eof;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace tpurun::keeper
