#pragma once
// Element-wise and row-wise kernels of a transformer layer, each fused with the reduction of
// the split-K GEMV partials that feed it (partials [n_splits][rows][part_stride] f32, added
// in split order). One block per activation row; every reduction has a fixed order, so a
// row's result does not depend on how many rows run beside it.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/gemv.h"
#include "cuda/rope.cuh"

namespace chorus::cuda {

struct Partials {
  const float* data = nullptr;  // [n_splits][rows][stride]
  int32_t n_splits = 0;         // 0: nothing to add
  int64_t split_stride = 0;     // elements between splits
  int32_t stride = 0;           // elements between rows
  int32_t col = 0;              // first column read
};

// x[r] += partials (when any); out[r] = f16(rmsnorm(x[r]) * norm_w); and, when ss is set,
// the sums of squares of x[r] per 64 columns (the GEMV's normalized-input format, gemv.h).
struct ResidualNormParams {
  float* x = nullptr;           // [n_rows][n_embd] residual stream, f32
  Partials add;
  const float* norm_w = nullptr;  // [n_embd]
  float eps = 1e-5f;
  __half* out = nullptr;        // [n_rows][out_stride]
  int32_t out_stride = 0;
  float* ss = nullptr;          // [n_rows][ss_stride] or null
  int32_t ss_stride = 0;
  __half* xw_h = nullptr;       // or null: [n_rows][xw_h_stride] f16(x * norm_w), GemvIn::HalfRowScaled's input
  int32_t xw_h_stride = 0;
  int32_t n_embd = 0;
  int32_t n_rows = 0;
};
void launch_residual_norm(const ResidualNormParams& p, cudaStream_t stream);

// out[r] = f16(rmsnorm(x[r]) * norm_w) with 1 / rms taken from the per-64-column sums of
// squares the residual's producer left (gemv.h): bit for bit what the GEMV's fused normalized
// input computes, once per row instead of once per GEMV block. The decode step uses it when
// several rows share a step, so the GEMVs stage plain f16 rows asynchronously.
struct NormRowsParams {
  GemvInput in;  // kind NormF32: rows [0, n_rows) of it (residual, sums of squares, weights, eps)
  int32_t n_cols = 0;
  int32_t n_rows = 0;
  __half* out = nullptr;  // [n_rows][out_stride]
  int32_t out_stride = 0;
  TraceSpan* trace = nullptr;  // step_trace.h: stamped by every block when set
};
void launch_norm_rows(const NormRowsParams& p, cudaStream_t stream);

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
  int32_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  RopeSpec rope;
  int32_t n_rows = 0;
};
void launch_qkv_rope(const QkvRopeParams& p, cudaStream_t stream);

enum class GateUpLayout : int32_t {
  Split,          // gate at columns [0, n_ff), up at [n_ff, 2 n_ff)
  Interleaved16,  // DeviceLayer::w_gate_up: gate i at gate_up_column(i), up 16 columns further
};

// out[r][i] = f16(silu(gate_i) * up_i).
struct SwigluParams {
  Partials gate_up;
  GateUpLayout layout = GateUpLayout::Split;
  __half* out = nullptr;  // [n_rows][out_stride]
  int32_t out_stride = 0;
  int32_t n_ff = 0;
  int32_t n_rows = 0;
};
void launch_swiglu(const SwigluParams& p, cudaStream_t stream);

}  // namespace chorus::cuda
