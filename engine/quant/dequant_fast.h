#pragma once
// Vectorised dequantization for the CPU matmul hot path. Bit-identical to the scalar
// reference in dequant.h for every type (the same float operations, in the same order);
// types without a vector version fall back to the reference.
#include <cstdint>

#include "engine/quant/tensor_type.h"

namespace chorus::quant {

void dequantize_row_fast(TensorType type, const void* src, float* dst, int64_t n_elems);

}  // namespace chorus::quant
