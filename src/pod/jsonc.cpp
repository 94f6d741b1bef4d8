#include "jsonc.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <vector>

#include "jsonc_text.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/util/parse_double.hpp"

namespace tpurun::jsonc {

std::string pointer_segment(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

namespace {

using nlohmann::json;

class Parser {
 public:
  Parser(std::string_view text, const std::string& path) : text_(text), path_(path) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text_.size(); ++i)
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // editors on Windows add one
  }

  Document run() {
    Document doc;
    skip_space();
    if (at_end()) fail("expected a JSON object, found an empty file");
    lines_[""] = line_of(pos_);
    doc.value = value("", 1);
    skip_space();
    if (!at_end()) fail("unexpected " + found() + " after the end of the document");
    doc.lines = std::move(lines_);
    return doc;
  }

 private:
  json value(const std::string& pointer, int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    char c = peek();
    if (c == '{') return object(pointer, depth);
    if (c == '[') return array(pointer, depth);
    if (c == '"') return read_string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (consume_word("true")) return true;
    if (consume_word("false")) return false;
    if (consume_word("null")) return nullptr;
    fail("expected a value (object, array, string, number, true, false or null), found " + found() +
         quote_hint());
  }

  json object(const std::string& pointer, int depth) {
    json result = json::object();
    ++pos_;  // '{'
    while (true) {
      skip_space();
      if (peek() == '}') break;  // empty object, or a trailing comma before '}'
      if (peek() != '"') fail("expected a string key or '}', found " + found() + quote_hint());
      size_t key_pos = pos_;
      std::string key = read_string();
      std::string child = pointer + "/" + pointer_segment(key);
      if (result.contains(key)) {
        fail_at(key_pos, "duplicate key \"" + key + "\" (first defined on line " +
                             std::to_string(lines_[child]) + ")");
      }
      skip_space();
      if (peek() != ':') fail("expected ':' after key \"" + key + "\", found " + found());
      ++pos_;
      skip_space();
      lines_[child] = line_of(key_pos);
      result[key] = value(child, depth + 1);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') break;
      fail("expected ',' or '}' after the value of \"" + key + "\", found " + found());
    }
    ++pos_;  // '}'
    return result;
  }

  json array(const std::string& pointer, int depth) {
    json result = json::array();
    ++pos_;  // '['
    while (true) {
      skip_space();
      if (peek() == ']') break;  // empty array, or a trailing comma before ']'
      std::string child = pointer + "/" + std::to_string(result.size());
      lines_[child] = line_of(pos_);
      result.push_back(value(child, depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') break;
      fail("expected ',' or ']' after an array element, found " + found());
    }
    ++pos_;  // ']'
    return result;
  }

  std::string read_string() {
    StringScan scan = scan_string(text_, pos_);
    if (!scan.error.empty()) fail_at(scan.error_pos, scan.error);
    pos_ = scan.end;
    return std::move(scan.value);
  }

  json number() {
    size_t start = pos_;
    bool integral = true;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (is_digit(peek())) fail("numbers cannot have leading zeros");
    } else if (!digits()) {
      fail("expected a digit after '-', found " + found());
    }
    if (peek() == '.') {
      ++pos_;
      integral = false;
      if (!digits()) fail("expected a digit after '.', found " + found());
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      integral = false;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!digits()) fail("expected a digit in the exponent, found " + found());
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      std::int64_t i = 0;
      if (std::from_chars(first, last, i).ec == std::errc()) return i;
      std::uint64_t u = 0;
      if (std::from_chars(first, last, u).ec == std::errc()) return u;
    }
    std::optional<double> d = parse_double(std::string_view(first, static_cast<size_t>(last - first)));
    if (!d) fail_at(start, "number out of range");
    return *d;
  }

  bool digits() {
    size_t start = pos_;
    while (is_digit(peek())) ++pos_;
    return pos_ > start;
  }

  bool consume_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    if (is_word_char(byte_at(pos_ + word.size()))) return false;  // "trueish"
    pos_ += word.size();
    return true;
  }

  void skip_space() {
    while (!at_end()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (text_.substr(pos_, 2) == "//") {
        size_t eol = text_.find('\n', pos_);
        pos_ = eol == std::string_view::npos ? text_.size() : eol + 1;
      } else if (text_.substr(pos_, 2) == "/*") {
        size_t close = text_.find("*/", pos_ + 2);
        if (close == std::string_view::npos) fail("unterminated /* comment");
        pos_ = close + 2;
      } else {
        return;
      }
    }
  }

  // What the parser saw instead of what it wanted, as the user would name it.
  std::string found() const {
    if (at_end()) return "end of input";
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (is_word_char(static_cast<char>(c))) {
      size_t end = pos_;
      while (end < text_.size() && end - pos_ < 24 && is_word_char(text_[end])) ++end;
      return "'" + std::string(text_.substr(pos_, end - pos_)) + "'";
    }
    if (c >= 0x20 && c < 0x7f) return "'" + std::string(1, static_cast<char>(c)) + "'";
    if (c == '\n') return "end of line";
    return "byte " + hex_byte(c);
  }

  std::string quote_hint() const {
    if (peek() == '\'') return " (JSON strings use double quotes)";
    if (is_word_char(peek())) return " (strings and keys need double quotes)";
    return "";
  }

  char peek() const { return byte_at(pos_); }
  char byte_at(size_t i) const { return i < text_.size() ? text_[i] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
  }

  int line_of(size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    return static_cast<int>(it - line_starts_.begin());
  }

  [[noreturn]] void fail(const std::string& message) const { fail_at(pos_, message); }
  [[noreturn]] void fail_at(size_t pos, const std::string& message) const {
    int line = line_of(pos);
    int column = static_cast<int>(pos - line_starts_[static_cast<size_t>(line - 1)]) + 1;
    throw ConfigError(path_, line, column, message);
  }

  std::string_view text_;
  const std::string& path_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;
  LineMap lines_;
};

}  // namespace

Document parse(std::string_view text, const std::string& path) { return Parser(text, path).run(); }

}  // namespace tpurun::jsonc
