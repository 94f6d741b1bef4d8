#include "jsonc_text.hpp"

#include <cstdint>

namespace tpurun::jsonc {

std::string hex_byte(unsigned char c) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[c >> 4] + digits[c & 0xf];
}

namespace {

// Length of the well-formed UTF-8 sequence at text[i], or 0 (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto at = [&](std::size_t k) -> unsigned {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u;
  };
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
    return at(k) >= lo && at(k) <= hi;
  };
  unsigned c = at(0);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c >= 0xe1 && c <= 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// The four hex digits after "\u" at text[i], or -1.
long hex4(std::string_view text, std::size_t i) {
  if (i + 4 > text.size()) return -1;
  long value = 0;
  for (std::size_t k = i; k < i + 4; ++k) {
    char c = text[k];
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// Decodes the escape whose backslash is text[i]; returns its length, or 0
// with `error` set.
std::size_t unescape(std::string_view text, std::size_t i, std::string& out, std::string& error) {
  char e = i + 1 < text.size() ? text[i + 1] : '\0';
  static constexpr std::string_view kEscapes = "\"\\/bfnrt";
  static constexpr std::string_view kMeanings = "\"\\/\b\f\n\r\t";
  if (size_t k = kEscapes.find(e); k != std::string_view::npos) {
    out += kMeanings[k];
    return 2;
  }
  if (e != 'u') {
    unsigned char u = static_cast<unsigned char>(e);
    error = "invalid escape in string: '\\" +
            (u >= 0x20 && u < 0x7f ? std::string(1, e) : hex_byte(u)) + "'";
    return 0;
  }
  long cp = hex4(text, i + 2);
  if (cp < 0) {
    error = "expected four hex digits after \\u";
    return 0;
  }
  if (cp >= 0xdc00 && cp <= 0xdfff) {
    error = "\\u escape is a lone low surrogate";
    return 0;
  }
  if (cp < 0xd800 || cp > 0xdbff) {
    append_utf8(out, static_cast<std::uint32_t>(cp));
    return 6;
  }
  // A high surrogate must be followed by "\u" and a low one: together they
  // name a character outside the Basic Multilingual Plane (e.g. an emoji).
  long low = text.substr(i + 6, 2) == "\\u" ? hex4(text, i + 8) : -1;
  if (low < 0xdc00 || low > 0xdfff) {
    error = "\\u escape is a high surrogate without a low surrogate after it";
    return 0;
  }
  append_utf8(out, 0x10000 + ((static_cast<std::uint32_t>(cp) - 0xd800) << 10) +
                       (static_cast<std::uint32_t>(low) - 0xdc00));
  return 12;
}

}  // namespace

StringScan scan_string(std::string_view text, std::size_t start) {
  StringScan scan;
  auto fail = [&](std::size_t pos, std::string message) {
    scan.error = std::move(message);
    scan.error_pos = pos;
    return scan;
  };
  std::size_t i = start + 1;
  while (true) {
    if (i >= text.size()) return fail(start, "unterminated string");
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"') {
      scan.end = i + 1;
      return scan;
    }
    if (c == '\n' || c == '\r')
      return fail(start, "unterminated string (strings cannot span lines)");
    if (c < 0x20)
      return fail(i, "control character " + hex_byte(c) + " in string; use an escape such as \\t");
    if (c == '\\') {
      std::size_t n = unescape(text, i, scan.value, scan.error);
      if (n == 0) return fail(i, scan.error);
      i += n;
      continue;
    }
    std::size_t n = utf8_length(text, i);
    if (n == 0) return fail(i, "invalid UTF-8 in string (byte " + hex_byte(c) + ")");
    scan.value.append(text.substr(i, n));
    i += n;
  }
}

}  // namespace tpurun::jsonc
