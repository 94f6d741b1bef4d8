#pragma once
// The protobuf wire format, as far as tpurun needs it to read libtpu's few
// metric messages and the profiler's Profile call (https://protobuf.dev/programming-guides/encoding/):
// varints, 64- and 32-bit fixed values, length-delimited fields; fields it
// does not know are skipped, as protobuf parsers do. Pulling in libprotobuf
// for this would cost ~1.8 MB (docs/top.md).
#include <cstdint>
#include <string>
#include <string_view>

namespace tpurun::wire {

enum WireType : int { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

struct Field {
  uint32_t number = 0;
  int type = 0;
  uint64_t value = 0;     // varint, fixed64, fixed32
  std::string_view data;  // length_delimited
};

// Reads fields one by one; stops at the end or at the first malformed byte.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}
  // False at the end of the input, or on an error (then error() says what).
  bool next(Field& field);
  const std::string& error() const { return error_; }

 private:
  bool read_varint(uint64_t& out);
  std::string_view rest_;
  std::string error_;
};

double as_double(uint64_t fixed64_bits);
int64_t as_int64(uint64_t varint);  // int64 fields: two's complement in 10 bytes

void put_varint(std::string& out, uint64_t value);
void put_string(std::string& out, uint32_t field_number, std::string_view value);
// A varint field; proto3 leaves out a field at its default (0), so does this.
void put_uint(std::string& out, uint32_t field_number, uint64_t value);

}  // namespace tpurun::wire
