// WatchTerminal on a real terminal: ANSI/xterm sequences and termios.
#include "ui/watch_terminal.hpp"

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <thread>

namespace tpurun {
namespace {

constexpr const char* kEnter = "\x1b[?1049h\x1b[?25l\x1b[H";  // alternate screen, hide cursor, home
constexpr const char* kLeave = "\x1b[?25h\x1b[?1049l";        // show cursor, back to the main screen

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the terminal went away: nothing left to draw on
    done += static_cast<size_t>(n);
  }
}

class TtyTerminal : public WatchTerminal {
 public:
  TtyTerminal(int out_fd, int in_fd) : out_(out_fd) {
    termios t{};
    if (in_fd >= 0 && ::isatty(in_fd) && ::tcgetattr(in_fd, &t) == 0) {
      in_ = in_fd;
      restore_fd_ = in_fd;
      saved_ = t;
      t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      t.c_cc[VMIN] = 1;
      t.c_cc[VTIME] = 0;
      ::tcsetattr(in_fd, TCSANOW, &t);
    }
    size_ = query_size();
    write_all(out_, kEnter);
  }
  ~TtyTerminal() override {
    write_all(out_, kLeave);
    if (saved_) ::tcsetattr(restore_fd_, TCSANOW, &*saved_);
  }

  void draw(const std::vector<std::string>& lines) override {
    const winsize size = query_size();  // size_ is resized()'s: draw may run on another thread
    const size_t rows = size.ws_row > 0 ? size.ws_row : 24;
    const size_t cols = size.ws_col > 0 ? size.ws_col : 80;
    std::string frame = "\x1b[H";
    for (size_t i = 0; i < lines.size() && i < rows; ++i) {
      if (i > 0) frame += "\r\n";  // never after the last row: that would scroll
      frame += fit_width(lines[i], cols) + "\x1b[K";
    }
    frame += "\x1b[J";
    write_all(out_, frame);
  }

  bool wait_for_quit(std::chrono::milliseconds timeout) override {
    if (in_ < 0) {
      std::this_thread::sleep_for(timeout);
      return false;
    }
    pollfd p{in_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) {
      in_ = -1;  // no more keys; Ctrl-C still works
      return false;
    }
    char keys[64];
    ssize_t n = ::read(in_, keys, sizeof keys);
    for (ssize_t i = 0; i < n; ++i) {
      if (keys[i] == 'q' || keys[i] == 'Q') return true;
    }
    return false;
  }

  bool resized() override {
    winsize now = query_size();
    bool changed = now.ws_row != size_.ws_row || now.ws_col != size_.ws_col;
    size_ = now;
    return changed;
  }

 private:
  winsize query_size() const {
    winsize w{};
    if (::ioctl(out_, TIOCGWINSZ, &w) != 0) w = {};
    return w;
  }

  int out_;
  int in_ = -1;          // where keys come from; -1: none
  int restore_fd_ = -1;  // whose termios saved_ holds
  std::optional<termios> saved_;
  winsize size_{};
};

}  // namespace

std::string fit_width(const std::string& text, size_t width) {
  size_t columns = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // inside a code point
    if (columns++ == width) return text.substr(0, i);
  }
  return text;
}

std::unique_ptr<WatchTerminal> open_watch_terminal(int out_fd, int in_fd) {
  return std::make_unique<TtyTerminal>(out_fd, in_fd);
}

}  // namespace tpurun
