#pragma once
// Element-wise and row-wise kernels of a transformer layer, each fused with the reduction of
// the split-K GEMV partials that feed it (partials [n_splits][rows][part_stride] f32, added
// in split order). One block per activation row; every reduction has a fixed order, so a
// row's result does not depend on how many rows run beside it.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace chorus::cuda {

struct Partials {
  const float* data = nullptr;  // [n_splits][rows][stride]
  int32_t n_splits = 0;         // 0: nothing to add
  int64_t split_stride = 0;     // elements between splits
  int32_t stride = 0;           // elements between rows
  int32_t col = 0;              // first column read
};

// x[r] += partials (when any); out[r] = f16(rmsnorm(x[r]) * norm_w).
struct ResidualNormParams {
  float* x = nullptr;           // [n_rows][n_embd] residual stream, f32
  Partials add;
  const float* norm_w = nullptr;  // [n_embd]
  float eps = 1e-5f;
  __half* out = nullptr;        // [n_rows][out_stride]
  int32_t out_stride = 0;
  int32_t n_embd = 0;
  int32_t n_rows = 0;
};
void launch_residual_norm(const ResidualNormParams& p, cudaStream_t stream);

enum class RopeKind : int32_t { Normal = 0, Neox = 1 };

// q/k/v from the QKV partials (+ biases), RoPE on q and k at each row's position, q to
// q_out (f32), k and v into the paged F16 cache at that position.
struct QkvRopeParams {
  Partials qkv;                  // columns: q [0, q_dim), k [q_dim, +kv_dim), v [q_dim+kv_dim, +kv_dim)
  const float* bq = nullptr;     // [q_dim] or null
  const float* bk = nullptr;
  const float* bv = nullptr;
  const int32_t* positions = nullptr;     // [n_rows]
  const int32_t* block_tables = nullptr;  // [n_rows][max_blocks]
  int32_t max_blocks = 0;
  int32_t block_tokens = 0;
  __half* k_cache = nullptr;     // this layer: [n_blocks][n_kv_heads][block_tokens][head_dim]
  __half* v_cache = nullptr;
  float* q_out = nullptr;        // [n_rows][q_dim]
  int32_t n_heads = 0, n_kv_heads = 0, head_dim = 0, rope_dim = 0;
  RopeKind rope = RopeKind::Normal;
  float rope_base = 10000.0f;
  int32_t n_rows = 0;
};
void launch_qkv_rope(const QkvRopeParams& p, cudaStream_t stream);

// out[r][i] = f16(silu(gate) * up), gate at columns [0, n_ff), up at [n_ff, 2 n_ff).
struct SwigluParams {
  Partials gate_up;
  __half* out = nullptr;  // [n_rows][out_stride]
  int32_t out_stride = 0;
  int32_t n_ff = 0;
  int32_t n_rows = 0;
};
void launch_swiglu(const SwigluParams& p, cudaStream_t stream);

}  // namespace chorus::cuda
