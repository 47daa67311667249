#include "engine/gguf/gguf_writer.h"

#include <cstring>
#include <memory>

namespace chorus::gguf {
namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void put_value(std::vector<uint8_t>& out, const Value& v) {
  switch (v.type) {
    case ValueType::UINT8: put<uint8_t>(out, static_cast<uint8_t>(v.i)); break;
    case ValueType::INT8: put<int8_t>(out, static_cast<int8_t>(v.i)); break;
    case ValueType::UINT16: put<uint16_t>(out, static_cast<uint16_t>(v.i)); break;
    case ValueType::INT16: put<int16_t>(out, static_cast<int16_t>(v.i)); break;
    case ValueType::UINT32: put<uint32_t>(out, static_cast<uint32_t>(v.i)); break;
    case ValueType::INT32: put<int32_t>(out, static_cast<int32_t>(v.i)); break;
    case ValueType::UINT64: put<uint64_t>(out, v.u); break;
    case ValueType::INT64: put<int64_t>(out, v.i); break;
    case ValueType::FLOAT32: put<float>(out, static_cast<float>(v.f)); break;
    case ValueType::FLOAT64: put<double>(out, v.f); break;
    case ValueType::BOOL: put<uint8_t>(out, v.b ? 1 : 0); break;
    case ValueType::STRING: put_string(out, v.s); break;
    case ValueType::ARRAY:
      put<uint32_t>(out, static_cast<uint32_t>(v.elem_type));
      put<uint64_t>(out, v.array.size());
      for (const Value& e : v.array) put_value(out, e);
      break;
  }
}

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

struct FileCloser {
  void operator()(std::FILE* f) const { if (f) std::fclose(f); }
};

}  // namespace

void Writer::set(const std::string& key, Value value) {
  for (auto& [k, v] : kv_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  kv_.emplace_back(key, std::move(value));
}

Result<size_t> Writer::checked_size(const std::string& name, TensorType type, const std::vector<int64_t>& ne) const {
  auto traits = tensor_type_traits(static_cast<uint32_t>(type));
  if (!traits) return make_error("tensor " + name + ": unknown type");
  if (ne.empty() || ne.size() > 4) return make_error("tensor " + name + ": needs 1 to 4 dimensions");
  if (ne[0] % traits->block_elems != 0) return make_error("tensor " + name + ": row is not whole blocks");
  int64_t n = 1;
  for (int64_t d : ne) {
    if (d <= 0) return make_error("tensor " + name + ": dimensions must be positive");
    n *= d;
  }
  return static_cast<size_t>(n / traits->block_elems) * traits->block_size_bytes;
}

Status Writer::add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne,
                          std::vector<uint8_t> data) {
  auto size = checked_size(name, type, ne);
  if (!size) return size.error();
  if (data.size() != *size) {
    return make_error("tensor " + name + ": " + std::to_string(data.size()) + " bytes given, " +
                      std::to_string(*size) + " needed");
  }
  tensors_.push_back(TensorEntry{name, type, ne, *size, false, std::move(data)});
  return Ok{};
}

Status Writer::declare_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne) {
  auto size = checked_size(name, type, ne);
  if (!size) return size.error();
  tensors_.push_back(TensorEntry{name, type, ne, *size, true, {}});
  return Ok{};
}

std::vector<uint8_t> Writer::header_bytes() const {
  std::vector<uint8_t> out;
  put<uint32_t>(out, 0x46554747u);  // "GGUF"
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  // general.alignment is written only when it differs from the format's default of 32.
  const bool write_alignment = alignment_ != 32;
  put<uint64_t>(out, kv_.size() + (write_alignment ? 1 : 0));
  for (const auto& [k, v] : kv_) {
    put_string(out, k);
    put<uint32_t>(out, static_cast<uint32_t>(v.type));
    put_value(out, v);
  }
  if (write_alignment) {
    put_string(out, "general.alignment");
    put<uint32_t>(out, static_cast<uint32_t>(ValueType::UINT32));
    put<uint32_t>(out, alignment_);
  }
  size_t offset = 0;
  for (const TensorEntry& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(out, static_cast<uint64_t>(d));
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset = align_up(offset + t.size_bytes, alignment_);
  }
  out.resize(align_up(out.size(), alignment_), 0);
  return out;
}

std::vector<uint8_t> Writer::to_bytes() const {
  std::vector<uint8_t> out = header_bytes();
  for (const TensorEntry& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    if (t.declared_only) out.resize(out.size() + t.size_bytes, 0);
    out.resize(align_up(out.size(), alignment_), 0);
  }
  return out;
}

Status Writer::write_file(const std::string& path, const DataSource& source) const {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "wb"));
  if (!f) return make_error(path + ": cannot create: " + std::strerror(errno));
  auto write = [&](const uint8_t* p, size_t n) -> Status {
    if (n && std::fwrite(p, 1, n, f.get()) != n) return make_error(path + ": write failed (disk full?)");
    return Ok{};
  };
  const std::vector<uint8_t> header = header_bytes();
  CHORUS_TRY(write(header.data(), header.size()));
  std::vector<uint8_t> buffer;
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorEntry& t = tensors_[i];
    const std::vector<uint8_t>* bytes = &t.data;
    if (t.declared_only) {
      if (!source) return make_error("tensor " + t.name + " was declared but no data source was given");
      buffer.clear();
      CHORUS_TRY(source(i, buffer));
      if (buffer.size() != t.size_bytes) return make_error("tensor " + t.name + ": data source gave the wrong size");
      bytes = &buffer;
    }
    CHORUS_TRY(write(bytes->data(), bytes->size()));
    const size_t pad = align_up(t.size_bytes, alignment_) - t.size_bytes;
    if (i + 1 < tensors_.size()) CHORUS_TRY(write(zeros.data(), pad));
  }
  if (std::fflush(f.get()) != 0) return make_error(path + ": write failed (disk full?)");
  return Ok{};
}

}  // namespace chorus::gguf
