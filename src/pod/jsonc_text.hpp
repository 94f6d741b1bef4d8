#pragma once
// The lexical details of JSON strings, kept apart from the grammar in jsonc.cpp.
#include <cstddef>
#include <string>
#include <string_view>

namespace tpurun::jsonc {

struct StringScan {
  std::string value;    // decoded, valid UTF-8
  std::size_t end = 0;  // just past the closing quote
  std::string error;    // empty when the literal is valid
  std::size_t error_pos = 0;
};

// Decodes the string literal whose opening quote is text[start]. Invalid
// UTF-8 is an error here, because nlohmann::json throws its own (non-config)
// exception when it later dumps such a string into a message.
StringScan scan_string(std::string_view text, std::size_t start);

// "0x1f"
std::string hex_byte(unsigned char c);

}  // namespace tpurun::jsonc
