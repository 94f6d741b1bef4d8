#include "tpurun/util/parse_double.hpp"

#include <charconv>
#include <system_error>

// TPURUN_HAVE_FROM_CHARS_DOUBLE comes from the feature test in CMakeLists.txt:
// libstdc++ has std::from_chars for double from GCC 11 on. With GCC 10
// (Debian 11) the same contract is kept with strtod in the C locale.
#ifndef TPURUN_HAVE_FROM_CHARS_DOUBLE
#include <cerrno>
#include <clocale>
#include <cstdlib>
#include <locale.h>
#include <string>
#endif

namespace tpurun {

std::optional<double> parse_double(std::string_view text) {
  double value = 0;
#ifdef TPURUN_HAVE_FROM_CHARS_DOUBLE
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
#else
  // strtod also takes what from_chars refuses: leading space, '+', hex.
  if (text.empty() || text.front() == '+' || text.front() == ' ' || text.front() == '\t' || text.front() == '\n' ||
      text.find_first_of("xX") != std::string_view::npos)
    return std::nullopt;
  static const locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", nullptr);
  const std::string copy(text);  // strtod needs a terminator
  char* end = nullptr;
  errno = 0;
  value = ::strtod_l(copy.c_str(), &end, c_locale);
  if (errno == ERANGE || end != copy.c_str() + copy.size()) return std::nullopt;
#endif
  return value;
}

}  // namespace tpurun
