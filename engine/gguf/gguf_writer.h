#pragma once
// Builds GGUF v3 files: metadata in insertion order, tensor data at the alignment.
// Used by tests (corrupt-file fixtures, small vocabularies) and by `chorus-bench synth`,
// whose multi-gigabyte tensors are produced on demand while the file is written.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/result.h"
#include "engine/gguf/gguf_value.h"
#include "engine/quant/tensor_type.h"

namespace chorus::gguf {

class Writer {
 public:
  // Produces tensor `index`'s bytes (exactly its size) when the file is written.
  using DataSource = std::function<Status(size_t index, std::vector<uint8_t>& out)>;

  explicit Writer(uint32_t alignment = 32) : alignment_(alignment) {}

  void set(const std::string& key, Value value);
  // `data` holds the tensor in `type`'s block layout; ne[0] is the row length.
  Status add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne,
                    std::vector<uint8_t> data);
  // A tensor whose bytes come from the DataSource given to write_file.
  Status declare_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne);

  std::vector<uint8_t> to_bytes() const;  // only when no tensor is merely declared
  Status write_file(const std::string& path, const DataSource& source = nullptr) const;

 private:
  struct TensorEntry {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    size_t size_bytes;
    bool declared_only;
    std::vector<uint8_t> data;
  };
  Result<size_t> checked_size(const std::string& name, TensorType type, const std::vector<int64_t>& ne) const;
  std::vector<uint8_t> header_bytes() const;  // header, metadata, tensor infos, padding

  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> kv_;
  std::vector<TensorEntry> tensors_;
};

}  // namespace chorus::gguf
