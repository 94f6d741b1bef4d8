#include "tpurun/transport/shell_quote.hpp"

#include <gtest/gtest.h>

#include "tpurun/util/subprocess.hpp"

namespace tpurun {
namespace {

// The arguments printf sees when a real POSIX shell parses the line that
// `quote` makes of `printf '%s\0' ARGS...`.
std::vector<std::string> through_sh(const std::vector<std::string>& args,
                                    std::string (*quote)(const std::vector<std::string>&)) {
  std::vector<std::string> argv = {"printf", "%s\\0"};
  argv.insert(argv.end(), args.begin(), args.end());
  CaptureSink sink;
  auto r = run_subprocess({"/bin/sh", "-c", quote(argv)}, "", std::nullopt, sink, CancelToken());
  EXPECT_TRUE(r.ok() && r->code == 0) << sink.err;
  std::vector<std::string> got;
  std::string cur;
  for (char c : sink.out) {
    if (c == '\0') got.push_back(std::exchange(cur, {}));
    else cur.push_back(c);
  }
  return got;
}

TEST(ShellQuoteTest, WrapsInSingleQuotes) { EXPECT_EQ(shell_quote("abc"), "'abc'"); }

TEST(ShellQuoteTest, EscapesEmbeddedSingleQuote) { EXPECT_EQ(shell_quote("it's"), "'it'\\''s'"); }

TEST(ShellQuoteTest, EmptyArgumentStaysAnArgument) { EXPECT_EQ(shell_join({"a", "", "b"}), "'a' '' 'b'"); }

// Given hostile arguments, when a real POSIX shell parses the joined line,
// then printf sees each argument verbatim.
TEST(ShellQuoteTest, RoundTripsHostileStringsThroughSh) {
  const std::vector<std::string> hostile = {
      "plain", "two words", "it's", "\"double\"", "$(touch /tmp/pwned)", "`id`", "a;b", "x && y",
      "line1\nline2", "tab\there", "back\\slash", "glob*?[a]", "~", "-n", "--", "ünïcødé ✓", "'", "''",
      "$HOME", "!bang", "#hash", "{a,b}", "trailing\\"};
  EXPECT_EQ(through_sh(hostile, shell_join), hostile);
}

TEST(ShellDisplay, QuotesOnlyWhatTheShellWouldChange) {
  EXPECT_EQ(shell_display({"gcloud", "compute", "tpus", "tpu-vm", "delete", "rc", "--zone", "us-central2-b",
                           "--labels=team=kmh,tier=spot", "--metadata-from-file=k=/a/b.txt", "user@host:22"}),
            "gcloud compute tpus tpu-vm delete rc --zone us-central2-b --labels=team=kmh,tier=spot "
            "--metadata-from-file=k=/a/b.txt user@host:22");
  EXPECT_EQ(shell_display({"echo", "two words", "it's", "", "$HOME", "~"}), "echo 'two words' 'it'\\''s' '' '$HOME' '~'");
  EXPECT_EQ(shell_display({"A=b", "A=b"}), "'A=b' A=b");  // first, it would be an assignment
}

TEST(ShellDisplay, PastedIntoAShellEachArgumentArrivesVerbatim) {
  const std::vector<std::string> args = {"plain", "--flag=a,b", "two words", "it's", "$(touch /tmp/pwned)", "a;b",
                                         "line1\nline2", "glob*?[a]", "~", "", "ünïcødé", "'", "x=y", "#hash"};
  EXPECT_EQ(through_sh(args, shell_display), args);
}

// The program comes on stdin, exactly: what follows it is the program's own
// input, and neither the program nor that input is in the command line.
TEST(Python3Command, TheProgramEveryWordAndTheInputAfterItArriveVerbatim) {
  const std::string program =
      "import sys\nsys.stdout.write('\\0'.join(sys.argv[1:]) + '|' + sys.stdin.read())  # it's \"quoted\" $(x) `y`\n";
  const std::vector<std::string> args = {"two words", "it's", "$(touch /tmp/pwned)", "a;b", "line1\nline2", ""};
  std::vector<std::string> words;
  for (const auto& a : args) words.push_back(shell_quote(a));
  const RemoteCommand command = python3_command(program, words);
  EXPECT_EQ(command.command_line.find("sys.stdout"), std::string::npos) << command.command_line;
  CaptureSink sink;
  auto r = run_subprocess({"/bin/sh", "-c", command.command_line}, command.stdin_data + "the input\n", std::nullopt,
                          sink, CancelToken());
  ASSERT_TRUE(r.ok() && r->code == 0) << sink.err;
  EXPECT_EQ(sink.out, std::string("two words\0it's\0$(touch /tmp/pwned)\0a;b\0line1\nline2\0|the input\n", 62));
}

}  // namespace
}  // namespace tpurun
