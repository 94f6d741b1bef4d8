#include "tpu/protobuf_wire.hpp"

#include <cstring>
#include <fmt/format.h>

namespace tpurun::wire {

bool Reader::read_varint(uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (rest_.empty()) {
      error_ = "a varint is cut short";
      return false;
    }
    const auto byte = static_cast<unsigned char>(rest_.front());
    rest_.remove_prefix(1);
    if (shift == 63 && byte > 1) {
      error_ = "a varint is longer than 64 bits";
      return false;
    }
    out |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  error_ = "a varint is longer than 10 bytes";
  return false;
}

bool Reader::next(Field& field) {
  if (rest_.empty() || !error_.empty()) return false;
  uint64_t key = 0;
  if (!read_varint(key)) return false;
  field = Field{};
  field.number = static_cast<uint32_t>(key >> 3);
  field.type = static_cast<int>(key & 7);
  if (field.number == 0 || (key >> 3) > 0x1fffffff) {
    error_ = fmt::format("bad field number {}", key >> 3);
    return false;
  }
  switch (field.type) {
    case varint:
      return read_varint(field.value);
    case fixed64:
    case fixed32: {
      const size_t n = field.type == fixed64 ? 8 : 4;
      if (rest_.size() < n) {
        error_ = fmt::format("field {} is cut short", field.number);
        return false;
      }
      uint64_t v = 0;
      for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(rest_[i])) << (8 * i);
      field.value = v;
      rest_.remove_prefix(n);
      return true;
    }
    case length_delimited: {
      uint64_t length = 0;
      if (!read_varint(length)) return false;
      if (length > rest_.size()) {
        error_ = fmt::format("field {} says {} bytes, {} are left", field.number, length, rest_.size());
        return false;
      }
      field.data = rest_.substr(0, length);
      rest_.remove_prefix(length);
      return true;
    }
    default:  // 3/4 are proto2 groups, never in proto3; 6/7 do not exist
      error_ = fmt::format("field {} has wire type {}, which proto3 does not use", field.number, field.type);
      return false;
  }
}

double as_double(uint64_t bits) {
  double d = 0;
  static_assert(sizeof d == sizeof bits);
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

int64_t as_int64(uint64_t v) { return static_cast<int64_t>(v); }

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_string(std::string& out, uint32_t field_number, std::string_view value) {
  put_varint(out, (static_cast<uint64_t>(field_number) << 3) | length_delimited);
  put_varint(out, value.size());
  out.append(value);
}

void put_uint(std::string& out, uint32_t field_number, uint64_t value) {
  if (value == 0) return;
  put_varint(out, static_cast<uint64_t>(field_number) << 3 | varint);
  put_varint(out, value);
}

}  // namespace tpurun::wire
