#include "tpurun/ui/confirm.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace tpurun {

bool can_ask(const Context& ctx) { return ::isatty(STDIN_FILENO) && ctx.err_is_tty; }

bool confirm(const std::string& question, Context& ctx) {
  if (!can_ask(ctx)) return false;
  fmt::print(ctx.err, "{}[y/N] ", question);
  std::fflush(ctx.err);
  std::string answer;
  return std::getline(std::cin, answer) && (answer == "y" || answer == "Y" || answer == "yes");
}

}  // namespace tpurun
