#include "engine/gguf/gguf_reader.h"

#include <cstring>
#include <limits>
#include <sstream>

namespace chorus::gguf {
namespace {

// Upper bounds that no real model comes near; they stop a corrupt count from turning into a
// multi-gigabyte allocation before the bytes behind it have been checked.
constexpr uint64_t kMaxStringBytes = 1ull << 30;
constexpr int kMaxArrayDepth = 8;

// Bounds-checked little-endian cursor over the file image.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& label)
      : data_(data), size_(size), label_(label) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  Error truncated(const char* what) const {
    std::ostringstream os;
    os << label_ << ": truncated or corrupt GGUF: " << what << " at byte " << pos_
       << " runs past the end of the file (" << size_ << " bytes)";
    return make_error(os.str());
  }

  template <typename T>
  Result<T> read(const char* what) {
    if (remaining() < sizeof(T)) return truncated(what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  Result<std::string> read_string(const char* what) {
    auto n = read<uint64_t>(what);
    if (!n) return n.error();
    if (*n > kMaxStringBytes || *n > remaining()) return truncated(what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(*n));
    pos_ += static_cast<size_t>(*n);
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& label_;
};

size_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
    case ValueType::UINT16: case ValueType::INT16: return 2;
    case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
    case ValueType::UINT64: case ValueType::INT64: case ValueType::FLOAT64: return 8;
    default: return 0;
  }
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::FLOAT64); }

Result<Value> read_value(Cursor& c, ValueType type, int depth, const std::string& key);

Result<Value> read_scalar(Cursor& c, ValueType type) {
  Value v;
  v.type = type;
  const char* what = "metadata value";
  switch (type) {
    case ValueType::UINT8: { auto r = c.read<uint8_t>(what); if (!r) return r.error(); v.i = *r; v.u = *r; break; }
    case ValueType::INT8: { auto r = c.read<int8_t>(what); if (!r) return r.error(); v.i = *r; v.u = static_cast<uint64_t>(v.i); break; }
    case ValueType::UINT16: { auto r = c.read<uint16_t>(what); if (!r) return r.error(); v.i = *r; v.u = *r; break; }
    case ValueType::INT16: { auto r = c.read<int16_t>(what); if (!r) return r.error(); v.i = *r; v.u = static_cast<uint64_t>(v.i); break; }
    case ValueType::UINT32: { auto r = c.read<uint32_t>(what); if (!r) return r.error(); v.i = *r; v.u = *r; break; }
    case ValueType::INT32: { auto r = c.read<int32_t>(what); if (!r) return r.error(); v.i = *r; v.u = static_cast<uint64_t>(v.i); break; }
    case ValueType::UINT64: { auto r = c.read<uint64_t>(what); if (!r) return r.error(); v.u = *r; v.i = static_cast<int64_t>(*r); break; }
    case ValueType::INT64: { auto r = c.read<int64_t>(what); if (!r) return r.error(); v.i = *r; v.u = static_cast<uint64_t>(*r); break; }
    case ValueType::FLOAT32: { auto r = c.read<float>(what); if (!r) return r.error(); v.f = *r; break; }
    case ValueType::FLOAT64: { auto r = c.read<double>(what); if (!r) return r.error(); v.f = *r; break; }
    case ValueType::BOOL: { auto r = c.read<uint8_t>(what); if (!r) return r.error(); v.b = *r != 0; break; }
    default: break;
  }
  return v;
}

Result<Value> read_value(Cursor& c, ValueType type, int depth, const std::string& key) {
  if (type == ValueType::STRING) {
    auto s = c.read_string("metadata string");
    if (!s) return s.error();
    return Value::make_string(std::move(*s));
  }
  if (type != ValueType::ARRAY) return read_scalar(c, type);

  if (depth >= kMaxArrayDepth) return c.truncated(("array nesting too deep in " + key).c_str());
  auto et = c.read<uint32_t>("array element type");
  if (!et) return et.error();
  if (!valid_value_type(*et)) return c.truncated(("unknown array element type in " + key).c_str());
  auto n = c.read<uint64_t>("array length");
  if (!n) return n.error();
  ValueType elem = static_cast<ValueType>(*et);
  // Every element occupies at least one byte (strings at least eight), so a count larger
  // than the bytes left is corrupt; checking first keeps `reserve` honest.
  size_t min_elem = elem == ValueType::STRING ? 8 : (elem == ValueType::ARRAY ? 12 : scalar_size(elem));
  if (*n > c.remaining() / min_elem) return c.truncated(("array " + key).c_str());
  Value v;
  v.type = ValueType::ARRAY;
  v.elem_type = elem;
  v.array.reserve(static_cast<size_t>(*n));
  for (uint64_t k = 0; k < *n; ++k) {
    auto item = read_value(c, elem, depth + 1, key);
    if (!item) return item.error();
    v.array.push_back(std::move(*item));
  }
  return v;
}

}  // namespace

std::string TensorInfo::shape_string() const {
  std::ostringstream os;
  os << '[';
  for (int d = 0; d < n_dims; ++d) os << (d ? ", " : "") << ne[d];
  os << ']';
  return os.str();
}

Result<Reader> Reader::open(const std::string& path) {
  auto f = MappedFile::open(path);
  if (!f) return f.error();
  Reader r;
  r.file_ = std::move(*f);
  r.base_ = r.file_.data();
  r.size_bytes_ = r.file_.size_bytes();
  r.label_ = path;
  auto st = r.parse_all();
  if (!st) return st.error();
  return r;
}

Result<Reader> Reader::parse(const uint8_t* data, size_t size_bytes, const std::string& label) {
  Reader r;
  r.base_ = data;
  r.size_bytes_ = size_bytes;
  r.label_ = label;
  auto st = r.parse_all();
  if (!st) return st.error();
  return r;
}

Status Reader::parse_all() {
  Cursor c(base_, size_bytes_, label_);
  auto magic = c.read<uint32_t>("magic");
  if (!magic) return make_error(label_ + ": not a GGUF file (too short)");
  if (*magic != kMagic) return make_error(label_ + ": not a GGUF file (bad magic)");
  auto version = c.read<uint32_t>("version");
  if (!version) return version.error();
  if (*version != 2 && *version != 3) {
    return make_error(label_ + ": unsupported GGUF version " + std::to_string(*version) +
                      " (this build reads versions 2 and 3)");
  }
  version_ = *version;
  auto n_tensors = c.read<uint64_t>("tensor count");
  if (!n_tensors) return n_tensors.error();
  auto n_kv = c.read<uint64_t>("metadata count");
  if (!n_kv) return n_kv.error();
  // A key-value pair takes at least 12 bytes and a tensor info at least 24.
  if (*n_kv > c.remaining() / 12) return c.truncated("metadata table");
  if (*n_tensors > c.remaining() / 24) return c.truncated("tensor table");

  for (uint64_t k = 0; k < *n_kv; ++k) {
    auto key = c.read_string("metadata key");
    if (!key) return key.error();
    auto t = c.read<uint32_t>("metadata type");
    if (!t) return t.error();
    if (!valid_value_type(*t)) {
      return make_error(label_ + ": corrupt GGUF: metadata key '" + *key + "' has unknown type " +
                        std::to_string(*t));
    }
    auto v = read_value(c, static_cast<ValueType>(*t), 0, *key);
    if (!v) return v.error();
    if (kv_.count(*key)) return make_error(label_ + ": corrupt GGUF: duplicate metadata key '" + *key + "'");
    kv_order_.push_back(*key);
    kv_.emplace(std::move(*key), std::move(*v));
  }

  if (const Value* a = find("general.alignment")) {
    if (!is_integer(a->type) || a->u == 0 || a->u > (1u << 20) || (a->u & (a->u - 1)) != 0) {
      return make_error(label_ + ": corrupt GGUF: general.alignment must be a power of two");
    }
    alignment_ = static_cast<uint32_t>(a->u);
  }

  tensors_.reserve(static_cast<size_t>(*n_tensors));
  for (uint64_t k = 0; k < *n_tensors; ++k) {
    TensorInfo ti;
    auto name = c.read_string("tensor name");
    if (!name) return name.error();
    ti.name = std::move(*name);
    auto nd = c.read<uint32_t>("tensor dimension count");
    if (!nd) return nd.error();
    if (*nd == 0 || *nd > kMaxDims) {
      return make_error(label_ + ": corrupt GGUF: tensor '" + ti.name + "' has " +
                        std::to_string(*nd) + " dimensions (1 to 4 allowed)");
    }
    ti.n_dims = static_cast<int>(*nd);
    uint64_t n_elems = 1;
    for (int d = 0; d < ti.n_dims; ++d) {
      auto ne = c.read<uint64_t>("tensor dimension");
      if (!ne) return ne.error();
      if (*ne == 0 || *ne > (1ull << 40) || n_elems > (1ull << 48) / *ne) {
        return make_error(label_ + ": corrupt GGUF: tensor '" + ti.name + "' has an impossible shape");
      }
      ti.ne[d] = static_cast<int64_t>(*ne);
      n_elems *= *ne;
    }
    auto type = c.read<uint32_t>("tensor type");
    if (!type) return type.error();
    ti.type_id = *type;
    auto offset = c.read<uint64_t>("tensor offset");
    if (!offset) return offset.error();
    ti.offset_bytes = *offset;
    auto traits = tensor_type_traits(ti.type_id);
    if (!traits) {
      return make_error(label_ + ": tensor '" + ti.name + "' has unsupported tensor type id " +
                        std::to_string(ti.type_id));
    }
    if (ti.ne[0] % traits->block_elems != 0) {
      return make_error(label_ + ": corrupt GGUF: tensor '" + ti.name + "' row of " +
                        std::to_string(ti.ne[0]) + " elements is not a whole number of " +
                        traits->name + " blocks");
    }
    ti.size_bytes = static_cast<size_t>(n_elems / traits->block_elems) * traits->block_size_bytes;
    if (tensor_index_.count(ti.name)) return make_error(label_ + ": corrupt GGUF: duplicate tensor '" + ti.name + "'");
    tensor_index_[ti.name] = tensors_.size();
    tensors_.push_back(std::move(ti));
  }

  // The data section starts at the next multiple of the alignment.
  uint64_t data_start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (data_start > size_bytes_ && !tensors_.empty()) return c.truncated("tensor data section");
  for (TensorInfo& ti : tensors_) {
    if (ti.offset_bytes % alignment_ != 0) {
      return make_error(label_ + ": corrupt GGUF: tensor '" + ti.name + "' offset is not aligned");
    }
    if (ti.offset_bytes > size_bytes_ || data_start + ti.offset_bytes > size_bytes_ ||
        ti.size_bytes > size_bytes_ - data_start - ti.offset_bytes) {
      std::ostringstream os;
      os << label_ << ": truncated or corrupt GGUF: tensor '" << ti.name << "' (" << ti.size_bytes
         << " bytes at offset " << data_start + ti.offset_bytes << ") lies past the end of the file ("
         << size_bytes_ << " bytes)";
      return make_error(os.str());
    }
    ti.data = base_ + data_start + ti.offset_bytes;
  }
  return Ok{};
}

const Value* Reader::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const TensorInfo* Reader::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<uint64_t> Reader::get_uint(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return make_error(label_ + ": missing metadata key '" + key + "'");
  if (!is_integer(v->type) || (v->type != ValueType::UINT64 && v->i < 0)) {
    return make_error(label_ + ": metadata key '" + key + "' is not a non-negative integer");
  }
  return v->type == ValueType::UINT64 ? v->u : static_cast<uint64_t>(v->i);
}

Result<double> Reader::get_float(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return make_error(label_ + ": missing metadata key '" + key + "'");
  if (is_float(v->type)) return v->f;
  if (is_integer(v->type)) return static_cast<double>(v->i);
  return make_error(label_ + ": metadata key '" + key + "' is not a number");
}

Result<std::string> Reader::get_string(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return make_error(label_ + ": missing metadata key '" + key + "'");
  if (v->type != ValueType::STRING) return make_error(label_ + ": metadata key '" + key + "' is not a string");
  return v->s;
}

Result<bool> Reader::get_bool(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return make_error(label_ + ": missing metadata key '" + key + "'");
  if (v->type == ValueType::BOOL) return v->b;
  if (is_integer(v->type)) return v->i != 0;
  return make_error(label_ + ": metadata key '" + key + "' is not a boolean");
}

Result<std::vector<std::string>> Reader::get_string_array(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return make_error(label_ + ": missing metadata key '" + key + "'");
  if (v->type != ValueType::ARRAY || v->elem_type != ValueType::STRING) {
    return make_error(label_ + ": metadata key '" + key + "' is not an array of strings");
  }
  std::vector<std::string> out;
  out.reserve(v->array.size());
  for (const Value& e : v->array) out.push_back(e.s);
  return out;
}

Result<std::vector<float>> Reader::get_float_array(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return make_error(label_ + ": missing metadata key '" + key + "'");
  if (v->type != ValueType::ARRAY || !(is_float(v->elem_type) || is_integer(v->elem_type))) {
    return make_error(label_ + ": metadata key '" + key + "' is not an array of numbers");
  }
  std::vector<float> out;
  out.reserve(v->array.size());
  for (const Value& e : v->array) out.push_back(is_float(e.type) ? static_cast<float>(e.f) : static_cast<float>(e.i));
  return out;
}

Result<std::vector<int64_t>> Reader::get_int_array(const std::string& key) const {
  const Value* v = find(key);
  if (!v) return make_error(label_ + ": missing metadata key '" + key + "'");
  if (v->type != ValueType::ARRAY || !is_integer(v->elem_type)) {
    return make_error(label_ + ": metadata key '" + key + "' is not an array of integers");
  }
  std::vector<int64_t> out;
  out.reserve(v->array.size());
  for (const Value& e : v->array) out.push_back(e.i);
  return out;
}

uint64_t Reader::get_uint_or(const std::string& key, uint64_t fallback) const {
  auto r = get_uint(key);
  return r ? *r : fallback;
}

double Reader::get_float_or(const std::string& key, double fallback) const {
  auto r = get_float(key);
  return r ? *r : fallback;
}

std::string Reader::get_string_or(const std::string& key, const std::string& fallback) const {
  auto r = get_string(key);
  return r ? *r : fallback;
}

}  // namespace chorus::gguf
