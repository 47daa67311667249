#pragma once
// Reference dequantization (scalar, exact): the CPU truth every faster kernel is checked
// against. Row length must be a multiple of the type's block size.
#include <cstdint>

#include "engine/quant/tensor_type.h"

namespace chorus::quant {

// Decodes n_elems elements starting at `src` (a whole number of blocks) into dst.
void dequantize_row(TensorType type, const void* src, float* dst, int64_t n_elems);

// Q4_K/Q5_K: unpack the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes.
inline void unpack_k_scale_min(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace chorus::quant
