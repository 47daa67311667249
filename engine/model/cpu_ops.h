#pragma once
// CPU building blocks of the forward pass, float32 throughout. Every reduction has a fixed
// order that does not depend on how many rows are processed together, so a sequence's
// result is the same whatever batch it shares (batch invariance).
#include <cstdint>

#include "engine/model/model_config.h"
#include "engine/model/weights.h"

namespace chorus {
class ThreadPool;

namespace cpu {

// sum_i a[i] * b[i], 8-wide lanes, fixed order.
float dot_f32(const float* a, const float* b, int64_t n);

// Y[r][o] = sum_i W[o][i] * X[r][i] (+ bias[o]).  X: [n_rows][w.ne0], Y: [n_rows][w.ne1].
// Each weight row is dequantized once and used for all n_rows inputs.
void matmul(ThreadPool& pool, const TensorView& w, const float* x, float* y, int64_t n_rows,
            const float* bias = nullptr);

// y = x / sqrt(mean(x^2) + eps) * weight, for n_rows rows of n.
void rmsnorm(const float* x, const float* weight, float* y, int64_t n_rows, int64_t n, float eps);

// Rotates each head of a row in place for position `pos`. vec: [n_heads][head_dim].
void rope(float* vec, int32_t n_heads, int32_t head_dim, int32_t rope_dim, int32_t pos,
          float base, RopeStyle style);

// out[i] = silu(gate[i]) * up[i]
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

// Dequantizes a 1-D tensor (norm weight, bias) to floats.
void load_vector(const TensorView& v, float* out);

}  // namespace cpu
}  // namespace chorus
