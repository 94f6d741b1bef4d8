#pragma once
// A yes/no question on the terminal, before something that cannot be undone
// (`down`) or that changes a TPU VM for the user (the first-use offer).
#include <string>

#include "tpurun/transport/context.hpp"

namespace tpurun {

// Whether there is someone to ask: stdin and stderr are terminals.
bool can_ask(const Context& ctx);
// Prints `question` and "[y/N] " on stderr and reads a line: true for y, Y
// or yes only. False at once when there is no one to ask.
bool confirm(const std::string& question, Context& ctx);

}  // namespace tpurun
