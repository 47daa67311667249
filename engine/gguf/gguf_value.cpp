#include "engine/gguf/gguf_value.h"

#include <sstream>

namespace chorus::gguf {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8: return "u8";
    case ValueType::INT8: return "i8";
    case ValueType::UINT16: return "u16";
    case ValueType::INT16: return "i16";
    case ValueType::UINT32: return "u32";
    case ValueType::INT32: return "i32";
    case ValueType::FLOAT32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::UINT64: return "u64";
    case ValueType::INT64: return "i64";
    case ValueType::FLOAT64: return "f64";
  }
  return "?";
}

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::UINT16: case ValueType::INT16:
    case ValueType::UINT32: case ValueType::INT32: case ValueType::UINT64: case ValueType::INT64:
      return true;
    default: return false;
  }
}

bool is_float(ValueType t) { return t == ValueType::FLOAT32 || t == ValueType::FLOAT64; }

Value Value::make_string_array(const std::vector<std::string>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(make_string(s));
  return make_array(ValueType::STRING, std::move(v));
}

Value Value::make_f32_array(const std::vector<float>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (float f : items) v.push_back(make_f32(f));
  return make_array(ValueType::FLOAT32, std::move(v));
}

Value Value::make_i32_array(const std::vector<int32_t>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (int32_t x : items) v.push_back(make_i32(x));
  return make_array(ValueType::INT32, std::move(v));
}

std::string Value::to_display_string(size_t max_items) const {
  std::ostringstream os;
  switch (type) {
    case ValueType::UINT64: os << u; break;
    case ValueType::FLOAT32: case ValueType::FLOAT64: os << f; break;
    case ValueType::BOOL: os << (b ? "true" : "false"); break;
    case ValueType::STRING:
      if (s.size() > 60) os << '"' << s.substr(0, 60) << "...\" (" << s.size() << " bytes)";
      else os << '"' << s << '"';
      break;
    case ValueType::ARRAY: {
      os << '[';
      for (size_t k = 0; k < array.size() && k < max_items; ++k) {
        if (k) os << ", ";
        os << array[k].to_display_string(max_items);
      }
      if (array.size() > max_items) os << ", ... (" << array.size() << " items)";
      os << ']';
      break;
    }
    default: os << i; break;
  }
  return os.str();
}

}  // namespace chorus::gguf
