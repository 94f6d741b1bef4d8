#include "tpurun/fanout/printer.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace tpurun {
namespace {

// Six readable ANSI colors, cycled by worker index.
const char* const kColors[] = {"\033[36m", "\033[33m", "\033[35m", "\033[32m", "\033[34m", "\033[91m"};
const char* const kBold = "\033[1m";
const char* const kReset = "\033[0m";
constexpr size_t kRedrawShown = 512;  // more never fits on one terminal line

int terminal_columns(std::FILE* file) {
  winsize size{};
  if (ioctl(fileno(file), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// The longest prefix of `text` that fits in `columns` (one column per UTF-8 character).
std::string_view fit_columns(std::string_view text, int columns) {
  int used = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (used == columns) return text.substr(0, i);
    ++used;
  }
  return text;
}

}  // namespace

LinePrinter::LinePrinter(std::FILE* out, std::FILE* err, bool color_out, bool color_err)
    : out_(out), err_(err), color_out_(color_out), color_err_(color_err) {}

void LinePrinter::worker_line(const Worker& worker, Stream stream, std::string_view text) {
  worker_line(worker.index, worker.display(), stream, text);
}

void LinePrinter::worker_line(int worker_index, std::string_view display, Stream stream, std::string_view text) {
  line(kColors[worker_index % 6], display, stream, text);
}

void LinePrinter::labelled_line(std::string_view label, Stream stream, std::string_view text) {
  line(kBold, label, stream, text);
}

void LinePrinter::line(const char* color, std::string_view prefix, Stream stream, std::string_view text) {
  const bool colored = stream == Stream::out ? color_out_ : color_err_;
  std::FILE* file = stream == Stream::out ? out_ : err_;
  std::lock_guard lock(mutex_);
  if (file != out_) flush_out_locked();  // what goes to stderr comes after the stdout lines before it
  buffer_.clear();
  if (colored) buffer_.append(color);
  buffer_.append("[").append(prefix).append("]");
  if (colored) buffer_.append(kReset);
  buffer_.append(" ").append(text).append("\n");
  clear_progress_locked();
  std::fwrite(buffer_.data(), 1, buffer_.size(), file);
  if (batch_ > 0 && file == out_) {
    out_pending_ = true;
  } else {
    std::fflush(file);
  }
}

void LinePrinter::begin_batch() {
  std::lock_guard lock(mutex_);
  ++batch_;
}

void LinePrinter::end_batch() {
  std::lock_guard lock(mutex_);
  if (--batch_ == 0) flush_out_locked();
}

void LinePrinter::note(std::string_view text) {
  std::lock_guard lock(mutex_);
  flush_out_locked();
  clear_progress_locked();
  std::string line = fmt::format("tpurun: {}\n", text);
  std::fwrite(line.data(), 1, line.size(), err_);
  std::fflush(err_);
}

void LinePrinter::progress(std::string_view text) {
  if (!color_err_) return;  // progress lines only make sense on a terminal
  std::lock_guard lock(mutex_);
  // A line that wrapped could not be erased by the next "\r\033[K".
  std::string line = fmt::format("\r\033[K{}", fit_columns(text, terminal_columns(err_) - 1));
  if (progress_shown_ && line == progress_line_) return;  // redrawing the same text is only noise
  progress_line_ = line;
  flush_out_locked();
  std::fwrite(line.data(), 1, line.size(), err_);
  std::fflush(err_);
  progress_shown_ = true;
}

void LinePrinter::clear_progress() {
  std::lock_guard lock(mutex_);
  clear_progress_locked();
}

void LinePrinter::flush_out_locked() {
  if (!out_pending_) return;
  std::fflush(out_);
  out_pending_ = false;
}

void LinePrinter::clear_progress_locked() {
  if (!progress_shown_) return;
  std::fputs("\r\033[K", err_);
  progress_shown_ = false;
}

void PrefixedSink::write(Stream stream, std::string_view data) {
  LineSplitter& lines = lines_[stream == Stream::out ? 0 : 1];
  lines.feed(data, [&](std::string_view line) { printer_->worker_line(worker_.index, display_, stream, line); });
  if (on_redraw_) on_redraw_(stream, lines.progress(kRedrawShown));
}

void PrefixedSink::flush() {
  for (int i = 0; i < 2; ++i) {
    const Stream stream = i == 0 ? Stream::out : Stream::err;
    if (auto last = lines_[i].finish()) printer_->worker_line(worker_.index, display_, stream, *last);
    if (on_redraw_) on_redraw_(stream, {});
  }
}

}  // namespace tpurun
