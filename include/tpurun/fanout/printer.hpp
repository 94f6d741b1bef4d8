#pragma once
// Terminal output shared by all workers: whole lines only, each prefixed with
// its worker, so lines from different workers never interleave.
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "tpurun/fanout/line_splitter.hpp"
#include "tpurun/pod/worker.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

class LinePrinter {
 public:
  LinePrinter(std::FILE* out, std::FILE* err, bool color_out, bool color_err);
  // Writes "[w3 10.0.0.5] text\n" to the stream's file, under one lock.
  void worker_line(const Worker& worker, Stream stream, std::string_view text);
  // Writes "[label] text\n", for a line several workers printed ("[w0-7] ...").
  void labelled_line(std::string_view label, Stream stream, std::string_view text);
  // A tpurun message on stderr: "tpurun: text".
  void note(std::string_view text);
  // A transient progress line on stderr (TTY only); replaced by the next one.
  // Cut to the terminal's width, so that the next one can replace it.
  void progress(std::string_view text);
  void clear_progress();
  bool color_err() const { return color_err_; }

 private:
  void write_line(Stream stream, const std::string& line);
  void clear_progress_locked();
  std::FILE* out_;
  std::FILE* err_;
  bool color_out_;
  bool color_err_;
  bool progress_shown_ = false;
  std::string progress_line_;  // what is shown, while progress_shown_
  std::mutex mutex_;
};

// One worker's output, as a command or a log follower hands it over.
class WorkerSink : public OutputSink {
 public:
  // The worker's output has ended: prints a last line that had no newline.
  virtual void flush() = 0;
};

// Per-worker sink that cuts the byte stream into lines (LineSplitter: `\r`
// redraws keep their last state, lines are cut at 64 KiB) for a LinePrinter.
class PrefixedSink : public WorkerSink {
 public:
  // on_redraw, if set, is called after every write with the latest `\r`
  // state of that stream's unfinished line ("" when it is not redrawn).
  using RedrawFn = std::function<void(Stream, const std::string&)>;
  PrefixedSink(LinePrinter& printer, Worker worker, RedrawFn on_redraw = {})
      : printer_(&printer), worker_(std::move(worker)), on_redraw_(std::move(on_redraw)) {}
  void write(Stream stream, std::string_view data) override;
  void flush() override;

 private:
  LinePrinter* printer_;
  Worker worker_;
  RedrawFn on_redraw_;
  LineSplitter lines_[2];
};

}  // namespace tpurun
