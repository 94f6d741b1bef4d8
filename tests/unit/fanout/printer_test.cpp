#include "tpurun/printer.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace tpurun {
namespace {

std::string slurp(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  return text;
}

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

}  // namespace
}  // namespace tpurun
