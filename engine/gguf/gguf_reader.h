#pragma once
// GGUF v2/v3 reader over a memory-mapped file. Every count, offset and size read from the
// file is checked against the file's size before use, so a truncated or corrupt file gives
// an Error naming the file and the problem, never a crash.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/mapped_file.h"
#include "engine/core/result.h"
#include "engine/gguf/gguf_value.h"
#include "engine/quant/tensor_type.h"

namespace chorus::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

struct TensorInfo {
  std::string name;
  int n_dims = 0;
  int64_t ne[kMaxDims] = {1, 1, 1, 1};  // ne[0] is the fastest-varying (row length)
  uint32_t type_id = 0;                 // ggml type id; see TensorType
  uint64_t offset_bytes = 0;            // relative to the data section
  size_t size_bytes = 0;
  const uint8_t* data = nullptr;        // inside the mapping

  TensorType type() const { return static_cast<TensorType>(type_id); }
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  std::string shape_string() const;
};

class Reader {
 public:
  // Opens and validates the whole header and tensor table.
  static Result<Reader> open(const std::string& path);
  // Parses an in-memory image (fuzzing, tests). The buffer must outlive the Reader.
  static Result<Reader> parse(const uint8_t* data, size_t size_bytes, const std::string& label);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::string& path() const { return label_; }
  size_t file_size_bytes() const { return size_bytes_; }

  const std::map<std::string, Value>& metadata() const { return kv_; }
  // Keys in file order (for display).
  const std::vector<std::string>& metadata_keys() const { return kv_order_; }
  const Value* find(const std::string& key) const;

  // Typed lookups. `Result` variants say which key is missing or has the wrong type.
  Result<uint64_t> get_uint(const std::string& key) const;
  Result<double> get_float(const std::string& key) const;
  Result<std::string> get_string(const std::string& key) const;
  Result<bool> get_bool(const std::string& key) const;
  Result<std::vector<std::string>> get_string_array(const std::string& key) const;
  Result<std::vector<float>> get_float_array(const std::string& key) const;
  Result<std::vector<int64_t>> get_int_array(const std::string& key) const;
  uint64_t get_uint_or(const std::string& key, uint64_t fallback) const;
  double get_float_or(const std::string& key, double fallback) const;
  std::string get_string_or(const std::string& key, const std::string& fallback) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(const std::string& name) const;

 private:
  MappedFile file_;  // empty when parsing an external buffer
  const uint8_t* base_ = nullptr;
  size_t size_bytes_ = 0;
  std::string label_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  std::map<std::string, Value> kv_;
  std::vector<std::string> kv_order_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;

  Status parse_all();
};

}  // namespace chorus::gguf
