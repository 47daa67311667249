#include <cfloat>

#include "cuda/attention.h"
#include "cuda/cuda_check.h"

namespace chorus::cuda {
namespace {

constexpr int kThreads = 128;

__global__ void attention_chunk_kernel(const AttentionParams p) {
  __shared__ float q_s[kAttnMaxGroup][kAttnMaxHeadDim];
  __shared__ float score_s[kAttnMaxGroup][kAttnChunkTokens];
  __shared__ int64_t row_off[kAttnChunkTokens];

  const int chunk = blockIdx.x, kvh = blockIdx.y, row = blockIdx.z;
  const int len = p.seq_lens[row];
  const int begin = chunk * kAttnChunkTokens;
  if (begin >= len) return;
  const int n_pos = min(kAttnChunkTokens, len - begin);
  const int group = p.n_heads / p.n_kv_heads, hd = p.head_dim;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int q_dim = p.n_heads * hd;

  for (int i = threadIdx.x; i < group * hd; i += kThreads) {
    q_s[i / hd][i % hd] = p.q[static_cast<int64_t>(row) * q_dim + (kvh * group) * hd + i] * p.scale;
  }
  __syncthreads();

  // Element offset of each position's K/V row, resolved once (keeps the table lookup out of
  // the loops below, whose loads are then independent and pipelined).
  const int32_t* table = p.block_tables + static_cast<int64_t>(row) * p.max_blocks;
  for (int i = threadIdx.x; i < n_pos; i += kThreads) {
    const int pos = begin + i;
    row_off[i] = ((static_cast<int64_t>(table[pos / p.block_tokens]) * p.n_kv_heads + kvh) * p.block_tokens +
                  pos % p.block_tokens) * hd;
  }
  __syncthreads();

  // Scores: a warp per position (4 positions in flight), lanes over dimension pairs,
  // butterfly sums (fixed order).
  constexpr int kPosPerIter = 4;
  for (int i0 = warp * kPosPerIter; i0 < n_pos; i0 += kPosPerIter * (kThreads / 32)) {
    float dot[kPosPerIter][kAttnMaxGroup];
#pragma unroll
    for (int j = 0; j < kPosPerIter; ++j)
#pragma unroll
      for (int g = 0; g < kAttnMaxGroup; ++g) dot[j][g] = 0.0f;
    for (int d2 = lane; d2 < hd / 2; d2 += 32) {
      float2 kf[kPosPerIter];
#pragma unroll
      for (int j = 0; j < kPosPerIter; ++j) {
        const int i = min(i0 + j, n_pos - 1);
        kf[j] = __half22float2(reinterpret_cast<const __half2*>(p.k_cache + row_off[i])[d2]);
      }
#pragma unroll
      for (int g = 0; g < kAttnMaxGroup; ++g) {
        if (g < group) {
          const float qx = q_s[g][2 * d2], qy = q_s[g][2 * d2 + 1];
#pragma unroll
          for (int j = 0; j < kPosPerIter; ++j) dot[j][g] += qx * kf[j].x + qy * kf[j].y;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kPosPerIter; ++j) {
#pragma unroll
      for (int g = 0; g < kAttnMaxGroup; ++g) {
        float v = dot[j][g];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0 && g < group && i0 + j < n_pos) score_s[g][i0 + j] = v;
      }
    }
  }
  __syncthreads();

  // Per head: max, exp, sum (a warp per head, lane-strided then butterfly).
  for (int g = warp; g < group; g += kThreads / 32) {
    float m = -FLT_MAX;
    for (int i = lane; i < n_pos; i += 32) m = fmaxf(m, score_s[g][i]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float l = 0.0f;
    for (int i = lane; i < n_pos; i += 32) {
      const float e = expf(score_s[g][i] - m);
      score_s[g][i] = e;
      l += e;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    if (lane == 0) {
      float* ml = p.part_ml + ((static_cast<int64_t>(row) * p.n_heads + kvh * group + g) * p.max_chunks + chunk) * 2;
      ml[0] = m;
      ml[1] = l;
    }
  }
  __syncthreads();

  // Unnormalized output: each thread owns (head, dimension pair) slots, positions in order.
  for (int slot = threadIdx.x; slot < group * hd / 2; slot += kThreads) {
    const int g = slot / (hd / 2), d2 = slot % (hd / 2);
    float ox = 0.0f, oy = 0.0f;
#pragma unroll 8
    for (int i = 0; i < n_pos; ++i) {
      const float2 vf = __half22float2(reinterpret_cast<const __half2*>(p.v_cache + row_off[i])[d2]);
      const float e = score_s[g][i];
      ox += e * vf.x;
      oy += e * vf.y;
    }
    float* o = p.part_o + ((static_cast<int64_t>(row) * p.n_heads + kvh * group + g) * p.max_chunks + chunk) * hd;
    o[2 * d2] = ox;
    o[2 * d2 + 1] = oy;
  }
}

__global__ void attention_combine_kernel(const AttentionParams p) {
  const int head = blockIdx.x, row = blockIdx.y;
  const int n_chunks = (p.seq_lens[row] + kAttnChunkTokens - 1) / kAttnChunkTokens;
  const int64_t base = static_cast<int64_t>(row) * p.n_heads + head;
  const float* ml = p.part_ml + base * p.max_chunks * 2;
  float m = -FLT_MAX;
  for (int c = 0; c < n_chunks; ++c) m = fmaxf(m, ml[2 * c]);
  float l = 0.0f;
  for (int c = 0; c < n_chunks; ++c) l += ml[2 * c + 1] * expf(ml[2 * c] - m);
  const float inv_l = 1.0f / l;
  for (int d = threadIdx.x; d < p.head_dim; d += blockDim.x) {
    float o = 0.0f;
    for (int c = 0; c < n_chunks; ++c) o += p.part_o[(base * p.max_chunks + c) * p.head_dim + d] * expf(ml[2 * c] - m);
    p.out[static_cast<int64_t>(row) * p.out_stride + head * p.head_dim + d] = __float2half_rn(o * inv_l);
  }
}

}  // namespace

void launch_attention(const AttentionParams& p, cudaStream_t stream) {
  if (p.n_heads / p.n_kv_heads > kAttnMaxGroup || p.head_dim > kAttnMaxHeadDim || p.head_dim % 2 != 0) {
    throw CudaError("attention: unsupported shape (heads per kv head " + std::to_string(p.n_heads / p.n_kv_heads) +
                    ", head_dim " + std::to_string(p.head_dim) + ")");
  }
  attention_chunk_kernel<<<dim3(p.grid_chunks, p.n_kv_heads, p.n_rows), kThreads, 0, stream>>>(p);
  CHORUS_CUDA_CHECK_LAUNCH();
  attention_combine_kernel<<<dim3(p.n_heads, p.n_rows), 128, 0, stream>>>(p);
  CHORUS_CUDA_CHECK_LAUNCH();
}

}  // namespace chorus::cuda
