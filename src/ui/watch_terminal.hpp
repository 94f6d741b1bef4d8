#pragma once
// The terminal under `status --all --watch`: a frame redrawn in place, like
// `watch` or `top`, and keys read as they are pressed. All terminal control
// (escape sequences, termios) lives behind this interface.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace tpurun {

class WatchTerminal {
 public:
  virtual ~WatchTerminal() = default;
  // Shows `lines` in place of the previous frame: each line overwritten and
  // cleared to its end, the rest of the screen cleared; never the whole screen
  // first, so nothing flickers. Lines are cut to the terminal's width and height.
  virtual void draw(const std::vector<std::string>& lines) = 0;
  // Waits up to `timeout` for a key; true when it asks to quit (q or Q).
  virtual bool wait_for_quit(std::chrono::milliseconds timeout) = 0;
  // True once after the terminal's size changed (the frame should be redrawn).
  virtual bool resized() = 0;
};

// Takes over the terminal `out_fd`: the alternate screen (the shell's screen
// comes back on exit), a hidden cursor, and, when `in_fd` is a terminal,
// keys without Enter or echo (signals stay on, so Ctrl-C still interrupts).
// The destructor restores all of it, so leaving by any return, exception or
// handled signal (SIGINT, SIGTERM) gives the terminal back as it was.
std::unique_ptr<WatchTerminal> open_watch_terminal(int out_fd, int in_fd);

// `text` cut to `width` columns (UTF-8 aware; each code point one column).
std::string fit_width(const std::string& text, size_t width);

}  // namespace tpurun
