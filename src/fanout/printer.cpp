#include "tpurun/printer.hpp"

#include <fmt/format.h>

namespace tpurun {
namespace {

// Six readable ANSI colors, cycled by worker index.
const char* const kColors[] = {"\033[36m", "\033[33m", "\033[35m", "\033[32m", "\033[34m", "\033[91m"};
const char* const kReset = "\033[0m";

}  // namespace

LinePrinter::LinePrinter(std::FILE* out, std::FILE* err, bool color_out, bool color_err)
    : out_(out), err_(err), color_out_(color_out), color_err_(color_err) {}

void LinePrinter::worker_line(const Worker& worker, Stream stream, std::string_view text) {
  std::FILE* file = stream == Stream::out ? out_ : err_;
  bool color = stream == Stream::out ? color_out_ : color_err_;
  std::string line;
  if (color) {
    line = fmt::format("{}[{}]{} {}\n", kColors[worker.index % 6], worker.display(), kReset, text);
  } else {
    line = fmt::format("[{}] {}\n", worker.display(), text);
  }
  std::lock_guard lock(mutex_);
  clear_progress_locked();
  std::fwrite(line.data(), 1, line.size(), file);
  std::fflush(file);
}

void LinePrinter::note(std::string_view text) {
  std::lock_guard lock(mutex_);
  clear_progress_locked();
  std::string line = fmt::format("tpurun: {}\n", text);
  std::fwrite(line.data(), 1, line.size(), err_);
  std::fflush(err_);
}

void LinePrinter::progress(std::string_view text) {
  if (!color_err_) return;  // progress lines only make sense on a terminal
  std::lock_guard lock(mutex_);
  std::string line = fmt::format("\r\033[K{}", text);
  std::fwrite(line.data(), 1, line.size(), err_);
  std::fflush(err_);
  progress_shown_ = true;
}

void LinePrinter::clear_progress() {
  std::lock_guard lock(mutex_);
  clear_progress_locked();
}

void LinePrinter::clear_progress_locked() {
  if (!progress_shown_) return;
  std::fputs("\r\033[K", err_);
  progress_shown_ = false;
}

void PrefixedSink::write(Stream stream, std::string_view data) {
  std::string& pending = pending_[stream == Stream::out ? 0 : 1];
  pending.append(data);
  size_t start = 0;
  for (size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
    std::string_view line(pending.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    printer_.worker_line(worker_, stream, line);
    start = nl + 1;
  }
  pending.erase(0, start);
}

void PrefixedSink::flush() {
  for (int i = 0; i < 2; ++i) {
    if (!pending_[i].empty()) {
      printer_.worker_line(worker_, i == 0 ? Stream::out : Stream::err, pending_[i]);
      pending_[i].clear();
    }
  }
}

}  // namespace tpurun
