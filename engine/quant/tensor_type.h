#pragma once
// Tensor element types with ggml's numeric ids (as stored in GGUF tensor infos) and their
// block geometry. Block layouts themselves live in quant/blocks.h.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace chorus {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

struct TensorTypeTraits {
  const char* name;
  int64_t block_elems;      // elements per block (1 for plain types)
  size_t block_size_bytes;  // bytes per block
  bool can_compute;         // the engine can dequantize / multiply with it
};

// Geometry of a ggml type id; nullopt for ids this build does not know.
std::optional<TensorTypeTraits> tensor_type_traits(uint32_t type_id);
std::string tensor_type_name(uint32_t type_id);

// Bytes of a row of n_elems elements; n_elems must be a multiple of the block size.
size_t row_size_bytes(TensorType type, int64_t n_elems);

}  // namespace chorus
