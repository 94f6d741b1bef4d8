#pragma once
// Cuts one stream of a worker's output into lines, with bounded memory:
// - a `\r` redraw (tqdm, JAX's compile progress) keeps only its latest state:
//   `a\rb\rc\n` is the line "c", and `progress()` is the latest state of a
//   line still being redrawn, for a progress display;
// - a line longer than kMaxLine bytes is cut there, with a note, and the rest
//   of it, up to its newline, is dropped.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tpurun {

class LineSplitter {
 public:
  static constexpr std::size_t kMaxLine = 64 * 1024;
  static constexpr std::string_view kCutNote = " ... [line cut at 64 KiB]";

  // Calls on_line for every line that `data` completes (without its newline).
  void feed(std::string_view data, const std::function<void(std::string_view)>& on_line);
  // The unfinished line (its latest redraw state), if any; the splitter is
  // then empty. Called when the stream ends.
  std::optional<std::string> finish();
  // The latest state of an unfinished line that was redrawn with `\r`
  // (tqdm writes "\r 45%|####  |"), at most `max` bytes; "" when none.
  std::string progress(std::size_t max = kMaxLine) const;

 private:
  void end_line(const std::function<void(std::string_view)>& on_line);
  void cut_line(const std::function<void(std::string_view)>& on_line);
  void reset_line();

  std::string pending_;     // bytes since the line's start or its last \r
  std::string redraw_;      // the state before the last \r
  bool redrawn_ = false;    // the unfinished line has seen a \r
  bool dropping_ = false;   // inside the rest of a line that was cut
};

}  // namespace tpurun
