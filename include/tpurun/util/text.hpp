#pragma once
#include <string>
#include <string_view>

namespace tpurun {

// At most `width` characters (UTF-8 code points), "..." marking a cut.
std::string truncate_text(std::string_view text, size_t width);

// For summaries: absolute paths shortened to their last part, so that
// "python3 /home/bob/proj/train.py --x" reads "python3 train.py --x".
std::string short_command(std::string_view command);

// "1 worker", "4 workers": a count and its noun, in the right number.
std::string count_of(size_t n, std::string_view noun);

}  // namespace tpurun
