#pragma once
// Read-only memory mapping of a whole file (RAII). The GGUF reader and the weights view
// borrow spans from it; it must outlive them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/result.h"

namespace chorus {

class MappedFile {
 public:
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }
  const std::string& path() const { return path_; }

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
  std::string path_;
};

}  // namespace chorus
