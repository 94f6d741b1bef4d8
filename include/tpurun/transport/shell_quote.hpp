#pragma once
// Quoting so that each argument arrives at the remote command verbatim,
// whatever it holds: spaces, quotes, $(), ;, newlines, unicode.
#include <string>
#include <string_view>
#include <vector>

#include "tpurun/transport/transport.hpp"

namespace tpurun {

// POSIX-shell single-quoting: abc -> 'abc', it's -> 'it'\''s'.
std::string shell_quote(std::string_view arg);
// Each argument quoted, joined with spaces.
std::string shell_join(const std::vector<std::string>& argv);
// For people to read and paste (--dry-run, logs): an argument is quoted only
// when the shell would change it, so `gcloud compute tpus tpu-vm delete rc`
// reads as typed and still means the same when pasted.
std::string shell_display(const std::vector<std::string>& argv);
// A python3 program of worker/ run on a worker: the command line, and the
// program as the start of its stdin. The login shell hands python3 the
// program's bytes as a file, so no argv holds its text, and what the caller
// writes after them is the program's own stdin. Isolated (no PYTHON*
// variables, no user site, not the cwd on sys.path) and without the site
// module: the programs use the standard library only, and start about a
// fifth sooner. The WORDS are shell words already: shell_quote'd, or a path
// that keeps "$HOME". Every TPU VM image has python3; nothing is installed.
RemoteCommand python3_command(std::string_view program, const std::vector<std::string>& words);

}  // namespace tpurun
