#include "cuda/cuda_check.h"
#include "cuda/launch.cuh"
#include "cuda/layer_ops.h"
#include "cuda/norm_rows.cuh"
#include "cuda/step_trace.cuh"
#include "cuda/weight_repack.h"

namespace chorus::cuda {
namespace {

// A row of the residual stream (up to 8192 wide) per block: 1024 threads keep each thread's
// chain of dependent loads short (a decode step has one row per sequence, so at M = 1 this
// kernel's latency, not its bandwidth, is what counts).
constexpr int kRowThreads = 1024;
constexpr int kEltThreads = 256;

__device__ __forceinline__ float sum_partials(const Partials& a, int row, int i) {
  float s = 0.0f;
  const float* base = a.data + static_cast<int64_t>(row) * a.stride + a.col + i;
  for (int k = 0; k < a.n_splits; ++k) s += base[k * a.split_stride];
  return s;
}

// Fixed-shape tree reduction over the block (kRowThreads threads).
__device__ float block_sum(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  if (warp == 0) {
    total = lane < kRowThreads / 32 ? scratch[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(0xffffffffu, total, o);
    if (lane == 0) scratch[0] = total;
  }
  __syncthreads();
  total = scratch[0];
  __syncthreads();
  return total;
}

__global__ void __launch_bounds__(kRowThreads) residual_norm_kernel(const ResidualNormParams p) {
  __shared__ float scratch[32];
  pdl_wait();
  pdl_trigger();
  const int row = blockIdx.x;
  float* x = p.x + static_cast<int64_t>(row) * p.n_embd;
  float ss = 0.0f;
#pragma unroll 4
  for (int i = threadIdx.x; i < p.n_embd; i += kRowThreads) {
    float v = x[i];
    if (p.add.n_splits > 0) {
      v += sum_partials(p.add, row, i);
      x[i] = v;
    }
    ss += v * v;
  }
  const float total = block_sum(ss, scratch);
  const float rstd = rsqrtf(total / static_cast<float>(p.n_embd) + p.eps);
  __half* out = p.out + static_cast<int64_t>(row) * p.out_stride;
#pragma unroll 4
  for (int i = threadIdx.x; i < p.n_embd; i += kRowThreads) out[i] = __float2half_rn(x[i] * rstd * p.norm_w[i]);
  if (p.xw_h != nullptr) {
    __half* xw = p.xw_h + static_cast<int64_t>(row) * p.xw_h_stride;
    for (int i = threadIdx.x; i < p.n_embd; i += kRowThreads) xw[i] = __float2half_rn(x[i] * p.norm_w[i]);
  }
  // block_sum's barriers made every thread's x writes visible; a thread per 64 columns.
  if (p.ss != nullptr) {
    for (int g = threadIdx.x; g * 64 < p.n_embd; g += kRowThreads) {
      float s = 0.0f;
      for (int i = 64 * g; i < min(64 * g + 64, p.n_embd); ++i) s += x[i] * x[i];
      p.ss[static_cast<int64_t>(row) * p.ss_stride + g] = s;
    }
  }
}

// 8 columns per thread, 1024 per block (grid: rows x column blocks). Each thread loads its
// x and w before 1 / rms is known, and every warp takes 1 / rms itself (the row's 64 sums of
// squares, an L1 hit after the first warp), so the block has one memory latency and no
// barrier: at M = 32 the one-block-per-row version took 9.6 us a launch (ncu, v7 run 9).
constexpr int kNormThreads = 128, kNormVec = 8;
__global__ void __launch_bounds__(kNormThreads) norm_rows_kernel(const NormRowsParams p) {
  trace_entry(p.trace);
  pdl_wait();
  trace_release(p.trace);
  pdl_trigger();
  const int row = blockIdx.x, c = (blockIdx.y * kNormThreads + threadIdx.x) * kNormVec;
  float x[kNormVec], w[kNormVec];
  load_norm8(p.in, row, c, p.n_cols, x, w);
  const float rstd =
      row_rstd_from_ss(p.in.ss + static_cast<int64_t>(row) * p.in.ss_stride, p.n_cols, p.in.eps, threadIdx.x & 31);
  const uint4 u = norm8_to_half(x, w, rstd);
  __half* out = p.out + static_cast<int64_t>(row) * p.out_stride + c;
  if (c + kNormVec <= p.n_cols && p.out_stride % 8 == 0) {
    *reinterpret_cast<uint4*>(out) = u;
  } else {
    __half h[kNormVec];
    memcpy(h, &u, sizeof(u));
#pragma unroll
    for (int j = 0; j < kNormVec; ++j) {
      if (c + j < p.n_cols) out[j] = h[j];
    }
  }
  trace_exit(p.trace);
}

__device__ __forceinline__ int64_t cache_offset(const QkvRopeParams& p, int row, int kv_head) {
  const int pos = p.positions[row];
  const int block = p.block_tables[static_cast<int64_t>(row) * p.max_blocks + pos / p.block_tokens];
  const int slot = pos % p.block_tokens;
  return ((static_cast<int64_t>(block) * p.n_kv_heads + kv_head) * p.block_tokens + slot) * p.head_dim;
}

// Grid (heads, rows): blockIdx.x < n_heads is a query head, then the kv heads' K, then their
// V; a thread per rotation pair (head_dim / 2 threads), so each row's work spreads over
// n_heads + 2 n_kv_heads blocks instead of one.
__global__ void qkv_rope_kernel(const QkvRopeParams p) {
  pdl_wait();
  pdl_trigger();
  const int head = blockIdx.x, row = blockIdx.y, j = threadIdx.x;
  const int q_dim = p.n_heads * p.head_dim, kv_dim = p.n_kv_heads * p.head_dim;
  if (head >= p.n_heads + p.n_kv_heads) {  // V: copy (+ bias) into the cache
    const int kvh = head - p.n_heads - p.n_kv_heads;
    __half* v = p.v_cache + cache_offset(p, row, kvh);
    for (int i = j; i < p.head_dim; i += blockDim.x) {
      float val = sum_partials(p.qkv, row, q_dim + kv_dim + kvh * p.head_dim + i);
      if (p.bv) val += p.bv[kvh * p.head_dim + i];
      v[i] = __float2half_rn(val);
    }
    return;
  }
  int i0, i1, freq;
  rope_pair(p.rope, j, i0, i1, freq);
  const bool is_q = head < p.n_heads;
  const int col0 = is_q ? head * p.head_dim : q_dim + (head - p.n_heads) * p.head_dim;
  float a = sum_partials(p.qkv, row, col0 + i0), b = sum_partials(p.qkv, row, col0 + i1);
  const float* bias = is_q ? p.bq : p.bk;
  if (bias) {
    const int bcol = is_q ? col0 : col0 - q_dim;
    a += bias[bcol + i0];
    b += bias[bcol + i1];
  }
  rope_rotate(p.rope, p.positions[row], freq, a, b);
  if (is_q) {
    float* q = p.q_out + static_cast<int64_t>(row) * q_dim + col0;
    q[i0] = a;
    q[i1] = b;
  } else {
    __half* k = p.k_cache + cache_offset(p, row, head - p.n_heads);
    k[i0] = __float2half_rn(a);
    k[i1] = __float2half_rn(b);
  }
}

// Grid (ceil(n_ff / 256), rows): one element per thread.
__global__ void swiglu_kernel(const SwigluParams p) {
  pdl_wait();
  pdl_trigger();
  const int row = blockIdx.y, i = blockIdx.x * kEltThreads + threadIdx.x;
  if (i >= p.n_ff) return;
  const int gcol = p.layout == GateUpLayout::Split ? i : static_cast<int>(gate_up_column(i));
  const int ucol = p.layout == GateUpLayout::Split ? p.n_ff + i : gcol + 16;
  const float g = sum_partials(p.gate_up, row, gcol), u = sum_partials(p.gate_up, row, ucol);
  p.out[static_cast<int64_t>(row) * p.out_stride + i] = __float2half_rn(g / (1.0f + expf(-g)) * u);
}

}  // namespace

void launch_residual_norm(const ResidualNormParams& p, cudaStream_t stream) {
  launch_pdl(residual_norm_kernel, dim3(p.n_rows), dim3(kRowThreads), 0, stream, p);
}

void launch_norm_rows(const NormRowsParams& p, cudaStream_t stream) {
  if (p.n_rows < 1) return;
  constexpr int kCols = kNormThreads * kNormVec;
  launch_pdl(norm_rows_kernel, dim3(p.n_rows, (p.n_cols + kCols - 1) / kCols), dim3(kNormThreads), 0, stream, p);
}

void launch_qkv_rope(const QkvRopeParams& p, cudaStream_t stream) {
  launch_pdl(qkv_rope_kernel, dim3(p.n_heads + 2 * p.n_kv_heads, p.n_rows), dim3(p.head_dim / 2), 0, stream, p);
}

void launch_swiglu(const SwigluParams& p, cudaStream_t stream) {
  launch_pdl(swiglu_kernel, dim3((p.n_ff + kEltThreads - 1) / kEltThreads, p.n_rows), dim3(kEltThreads), 0,
             stream, p);
}

}  // namespace chorus::cuda
