// Text cut to fit a column, and commands shortened for summaries.
#include "tpurun/util/text.hpp"

namespace tpurun {

std::string truncate_text(std::string_view text, size_t width) {
  size_t points = 0, cut = std::string_view::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (points == (width > 3 ? width - 3 : 0)) cut = i;
    if (++points > width) return std::string(text.substr(0, cut)) + "...";
  }
  return std::string(text);
}

std::string short_command(std::string_view command) {
  std::string out;
  size_t i = 0;
  while (i < command.size()) {
    size_t end = command.find(' ', i);
    if (end == std::string_view::npos) end = command.size();
    std::string_view word = command.substr(i, end - i);
    if (word.size() > 1 && word.front() == '/' && word.back() != '/') word = word.substr(word.rfind('/') + 1);
    out.append(word);
    if (end < command.size()) out.push_back(' ');
    i = end + 1;
  }
  return out;
}

std::string count_of(size_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace tpurun
