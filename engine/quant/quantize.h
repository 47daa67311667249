#pragma once
// Reference quantization: float rows into ggml block layouts (quant/blocks.h), the inverse
// of dequantize_row up to each type's rounding error. Used by `chorus-bench synth` to write
// synthetic models and by tests to make fixtures. Pure functions of their inputs, so rows
// can be quantized on any number of threads.
//
// The scale search is simple: per block (or K sub-block) a handful of candidate scales are
// tried and refitted by least squares; there is no importance matrix. Values that already
// lie on a type's grid (e.g. a dequantized block) come back bit-exactly.
#include <cstdint>

#include "engine/quant/tensor_type.h"

namespace chorus::quant {

// The types quantize_row accepts: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K Q5_K Q6_K.
bool can_quantize(TensorType type);

// Encodes n_elems floats from src into dst (row_size_bytes(type, n_elems) bytes).
// n_elems must be a multiple of the type's block size and the type must be quantizable:
// both are caller invariants (asserted).
void quantize_row(TensorType type, const float* src, void* dst, int64_t n_elems);

}  // namespace chorus::quant
