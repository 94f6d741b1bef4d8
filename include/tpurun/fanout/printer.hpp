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
  // The same with the worker's display() given ("w3 10.0.0.5"), for callers
  // that print many lines of one worker.
  void worker_line(int worker_index, std::string_view display, Stream stream, std::string_view text);
  // Writes "[label] text\n", for a line several workers printed ("[w0-7] ...").
  void labelled_line(std::string_view label, Stream stream, std::string_view text);
  // Between begin_batch() and end_batch() (they nest), lines on stdout are
  // written out when the batch ends, or before anything is written to stderr,
  // not after each line: a follower reading a log prints many lines at once.
  void begin_batch();
  void end_batch();
  // A tpurun message on stderr: "tpurun: text".
  void note(std::string_view text);
  // A transient progress line on stderr (TTY only); replaced by the next one.
  // Cut to the terminal's width, so that the next one can replace it.
  void progress(std::string_view text);
  void clear_progress();
  bool color_err() const { return color_err_; }

 private:
  void line(const char* color, std::string_view prefix, Stream stream, std::string_view text);
  void clear_progress_locked();
  void flush_out_locked();
  std::FILE* out_;
  std::FILE* err_;
  bool color_out_;
  bool color_err_;
  bool progress_shown_ = false;
  std::string progress_line_;  // what is shown, while progress_shown_
  int batch_ = 0;              // begin_batch() calls not yet ended
  bool out_pending_ = false;   // out_ has lines not flushed yet
  std::string buffer_;         // the line being written
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
      : printer_(&printer), worker_(std::move(worker)), display_(worker_.display()), on_redraw_(std::move(on_redraw)) {}
  void write(Stream stream, std::string_view data) override;
  void flush() override;

 private:
  LinePrinter* printer_;
  Worker worker_;
  std::string display_;
  RedrawFn on_redraw_;
  LineSplitter lines_[2];
};

}  // namespace tpurun
