#pragma once
// Terminal output shared by all workers: whole lines only, each prefixed with
// its worker, so lines from different workers never interleave.
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "tpurun/transport.hpp"
#include "tpurun/worker.hpp"

namespace tpurun {

class LinePrinter {
 public:
  LinePrinter(std::FILE* out, std::FILE* err, bool color_out, bool color_err);
  // Writes "[w3 10.0.0.5] text\n" to the stream's file, under one lock.
  void worker_line(const Worker& worker, Stream stream, std::string_view text);
  // A tpurun message on stderr: "tpurun: text".
  void note(std::string_view text);
  // A transient progress line on stderr (TTY only); replaced by the next one.
  void progress(std::string_view text);
  void clear_progress();
  bool color_err() const { return color_err_; }

 private:
  void clear_progress_locked();
  std::FILE* out_;
  std::FILE* err_;
  bool color_out_;
  bool color_err_;
  bool progress_shown_ = false;
  std::mutex mutex_;
};

// Per-worker sink that cuts the byte stream into lines for a LinePrinter.
class PrefixedSink : public OutputSink {
 public:
  PrefixedSink(LinePrinter& printer, Worker worker) : printer_(printer), worker_(std::move(worker)) {}
  void write(Stream stream, std::string_view data) override;
  // Emits a last line that had no trailing newline.
  void flush();

 private:
  LinePrinter& printer_;
  Worker worker_;
  std::string pending_[2];
};

}  // namespace tpurun
