#pragma once
// A GGUF metadata value: a scalar, a string, or an array (arrays may nest).
#include <cstdint>
#include <string>
#include <vector>

namespace chorus::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

const char* value_type_name(ValueType t);
bool is_integer(ValueType t);
bool is_float(ValueType t);

struct Value {
  ValueType type = ValueType::UINT8;
  // Exactly one of these is meaningful, chosen by `type`. Integers of every width are held
  // in `i` (signed types, and unsigned up to 63 bits) or `u` (UINT64).
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0.0;
  bool b = false;
  std::string s;
  ValueType elem_type = ValueType::UINT8;  // for ARRAY
  std::vector<Value> array;

  static Value make_u32(uint32_t v) { Value x; x.type = ValueType::UINT32; x.i = v; x.u = v; return x; }
  static Value make_i32(int32_t v) { Value x; x.type = ValueType::INT32; x.i = v; x.u = static_cast<uint64_t>(v); return x; }
  static Value make_u64(uint64_t v) { Value x; x.type = ValueType::UINT64; x.u = v; x.i = static_cast<int64_t>(v); return x; }
  static Value make_f32(float v) { Value x; x.type = ValueType::FLOAT32; x.f = v; return x; }
  static Value make_bool(bool v) { Value x; x.type = ValueType::BOOL; x.b = v; return x; }
  static Value make_string(std::string v) { Value x; x.type = ValueType::STRING; x.s = std::move(v); return x; }
  static Value make_array(ValueType elem, std::vector<Value> items) {
    Value x; x.type = ValueType::ARRAY; x.elem_type = elem; x.array = std::move(items); return x;
  }
  static Value make_string_array(const std::vector<std::string>& items);
  static Value make_f32_array(const std::vector<float>& items);
  static Value make_i32_array(const std::vector<int32_t>& items);

  // Render for `chorus-cli info` (arrays are abbreviated).
  std::string to_display_string(size_t max_items = 8) const;
};

}  // namespace chorus::gguf
