#pragma once
// Reads a whole decimal number ("1.5", "2e-3") as std::from_chars does: no
// leading space or '+', and nullopt when the text is not entirely a number or
// its value is out of a double's range.
#include <optional>
#include <string_view>

namespace tpurun {

std::optional<double> parse_double(std::string_view text);

}  // namespace tpurun
