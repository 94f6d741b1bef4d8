#include "tpurun/fanout/printer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "fakes/slurp.hpp"

namespace tpurun {
namespace {

using testing::slurp;

TEST(PrefixedSinkTest, CutsChunksIntoPrefixedLinesPerStream) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  LinePrinter printer(out, err, false, false);
  PrefixedSink sink(printer, Worker{3, "10.0.0.4", 22});
  // Given output arriving in pieces that split lines,
  sink.write(Stream::out, "hel");
  sink.write(Stream::err, "oops\n");
  sink.write(Stream::out, "lo\nwor");
  sink.write(Stream::out, "ld\r\npartial");
  // when the worker ends,
  sink.flush();
  // then only whole lines were printed, each with the worker's prefix.
  EXPECT_EQ(slurp(out), "[w3 10.0.0.4] hello\n[w3 10.0.0.4] world\n[w3 10.0.0.4] partial\n");
  EXPECT_EQ(slurp(err), "[w3 10.0.0.4] oops\n");
  std::fclose(out);
  std::fclose(err);
}

TEST(LinePrinterTest, ColorsPrefixOnlyWhenAsked) {
  std::FILE* out = std::tmpfile();
  LinePrinter printer(out, out, true, false);
  printer.worker_line(Worker{0, "h", 22}, Stream::out, "x");
  EXPECT_NE(slurp(out).find("\033["), std::string::npos);
  std::fclose(out);
}

TEST(LinePrinterTest, ProgressIsRedrawnOnlyWhenItChanges) {
  std::FILE* err = std::tmpfile();
  LinePrinter printer(err, err, false, true);
  printer.progress("3 running");
  printer.progress("3 running");
  EXPECT_EQ(slurp(err), "\r\033[K3 running");
  // After a line cleared it, the same text is drawn again.
  printer.note("hi");
  printer.progress("3 running");
  EXPECT_EQ(slurp(err), "\r\033[K3 running\r\033[Ktpurun: hi\n\r\033[K3 running");
  std::fclose(err);
}

TEST(LinePrinterTest, ProgressIsCutToTheTerminalWidth) {
  std::FILE* err = std::tmpfile();  // not a terminal: 80 columns
  LinePrinter printer(err, err, false, true);
  printer.progress(std::string(200, 'p'));
  EXPECT_EQ(slurp(err), "\r\033[K" + std::string(79, 'p'));
  std::fclose(err);
}

// What reached the file itself, not what waits in the FILE's buffer.
std::string written(std::FILE* f) {
  std::string text(4096, '\0');
  const ssize_t n = ::pread(fileno(f), text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return text;
}

TEST(LinePrinterTest, ABatchWritesItsStdoutLinesWhenItEnds) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  LinePrinter printer(out, err, false, false);
  printer.begin_batch();
  printer.worker_line(Worker{0, "h", 22}, Stream::out, "one");
  printer.labelled_line("w0-1", Stream::out, "two");
  EXPECT_EQ(written(out), "");
  printer.end_batch();
  EXPECT_EQ(written(out), "[w0 h] one\n[w0-1] two\n");
  // Outside a batch, every line is written at once.
  printer.worker_line(3, "w3 h3", Stream::out, "three");
  EXPECT_EQ(written(out), "[w0 h] one\n[w0-1] two\n[w3 h3] three\n");
  std::fclose(out);
  std::fclose(err);
}

TEST(LinePrinterTest, StderrInABatchComesAfterTheStdoutLinesBeforeIt) {
  // Given stdout and stderr going to one file (2>&1),
  std::FILE* file = std::tmpfile();
  std::FILE* out = fdopen(::dup(fileno(file)), "w");
  std::FILE* err = fdopen(::dup(fileno(file)), "w");
  std::setvbuf(err, nullptr, _IONBF, 0);
  LinePrinter printer(out, err, false, false);
  printer.begin_batch();
  printer.labelled_line("w0-1", Stream::out, "a");
  printer.labelled_line("w0-1", Stream::err, "b");
  printer.note("c");
  printer.labelled_line("w0-1", Stream::out, "d");
  printer.end_batch();
  // then the lines are in the order they were printed.
  EXPECT_EQ(written(file), "[w0-1] a\n[w0-1] b\ntpurun: c\n[w0-1] d\n");
  std::fclose(out);
  std::fclose(err);
  std::fclose(file);
}

TEST(PrefixedSinkTest, RedrawsReachTheCallbackAndOnlyTheFinalStateIsPrinted) {
  std::FILE* out = std::tmpfile();
  LinePrinter printer(out, out, false, false);
  std::vector<std::string> redraws;
  PrefixedSink sink(printer, Worker{1, "h", 22}, [&](Stream, const std::string& r) { redraws.push_back(r); });
  sink.write(Stream::out, "10%\r20%\r");
  sink.write(Stream::out, "100%\n");
  EXPECT_EQ(slurp(out), "[w1 h] 100%\n");
  EXPECT_EQ(redraws, (std::vector<std::string>{"20%", ""}));
  std::fclose(out);
}

}  // namespace
}  // namespace tpurun
