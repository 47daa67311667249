#pragma once
// One chunk of decode attention (attention.h): the scores of up to kAttnChunkTokens cached
// positions of one row against the query heads of one kv head, their softmax partial
// (max, sum) and the unnormalized P.V, written to the partial arrays. Shared by the per-row
// kernel (attention.cu) and the fused decode kernel (attention_decode.cu).
#include <cfloat>
#include <string>

#include "cuda/attention.h"
#include "cuda/cuda_check.h"

namespace chorus::cuda {

inline constexpr int kAttnThreads = 128;
inline constexpr int kAttnWarps = kAttnThreads / 32;

// kG: query heads per kv head the instantiation holds (>= the model's group); kP: head
// dimension pairs a lane owns in P.V (head_dim <= 64 kP). Both compile-time so that the
// unrolled loops issue no predicated-off work (the kernel is latency-bound at small M).
template <int kG, int kP>
struct ChunkSmem {
  float q_s[kG][kAttnMaxHeadDim];  // the group's queries, RoPE applied, pre-scaled; then (cluster
                                   // merge) the chunk's unnormalized output per head
  float score_s[kG][kAttnChunkTokens];
  int64_t row_off[kAttnChunkTokens];
  float red[kAttnWarps][kG][kP * 64];  // per-warp P.V partials
  float ml_s[kG][2];                   // cluster merge: the chunk's (max, sum) per head
};

// Where attend_chunk leaves a chunk's partial for query head g of the group: (max, sum) at
// ml + g * ml_stride, the unnormalized output at o + g * o_stride. In the partial arrays
// (global_sink), or in the block's shared memory for a merge inside a cluster.
struct ChunkSink {
  float* ml;
  int64_t ml_stride;
  float* o;
  int64_t o_stride;
};
__device__ __forceinline__ ChunkSink global_sink(const AttentionParams& p, int row, int kvh, int chunk) {
  const int64_t head0 = static_cast<int64_t>(row) * p.n_heads + kvh * (p.n_heads / p.n_kv_heads);
  return ChunkSink{p.part_ml + (head0 * p.max_chunks + chunk) * 2, int64_t{p.max_chunks} * 2,
                   p.part_o + (head0 * p.max_chunks + chunk) * p.head_dim, int64_t{p.max_chunks} * p.head_dim};
}

// Element offset in the K (and V) cache of row `row`'s position `pos` for kv head kvh.
__device__ __forceinline__ int64_t cache_row(const AttentionParams& p, int row, int kvh, int pos) {
  const int block = p.block_tables[static_cast<int64_t>(row) * p.max_blocks + pos / p.block_tokens];
  return ((static_cast<int64_t>(block) * p.n_kv_heads + kvh) * p.block_tokens + pos % p.block_tokens) * p.head_dim;
}

// The offsets of the chunk's n_pos K/V rows, resolved once (keeps the table lookup out of the
// loops of attend_chunk, whose loads are then independent). Needs a __syncthreads() before
// row_off is read.
__device__ __forceinline__ void resolve_rows(const AttentionParams& p, int64_t* row_off, int chunk, int kvh, int row,
                                             int n_pos) {
  for (int i = threadIdx.x; i < n_pos; i += kAttnThreads) row_off[i] = cache_row(p, row, kvh, chunk * kAttnChunkTokens + i);
}

// Where attend_chunk reads position i's K and V rows: in the cache (offsets from resolve_rows)...
struct CacheRows {
  const __half* k;
  const __half* v;
  const int64_t* row_off;
  __device__ const __half2* k_row(int i) const { return reinterpret_cast<const __half2*>(k + row_off[i]); }
  __device__ const __half2* v_row(int i) const { return reinterpret_cast<const __half2*>(v + row_off[i]); }
};
// ...or in a copy the block staged in shared memory, rows head_dim halves apart. The values
// are the same halves either way, so both give the same bits.
struct StagedRows {
  const __half* k;
  const __half* v;
  int head_dim;
  __device__ const __half2* k_row(int i) const { return reinterpret_cast<const __half2*>(k + i * head_dim); }
  __device__ const __half2* v_row(int i) const { return reinterpret_cast<const __half2*>(v + i * head_dim); }
};

// Needs s.q_s filled and the rows readable, then a __syncthreads(); ends with the partials written.
template <int kG, int kP, typename Rows>
__device__ __forceinline__ void attend_chunk(const AttentionParams& p, ChunkSmem<kG, kP>& s, int chunk, int row,
                                             const Rows& rows, const ChunkSink& sink) {
  constexpr int kThreads = kAttnThreads, kWarps = kAttnWarps;
  auto& q_s = s.q_s;
  auto& score_s = s.score_s;
  auto& red = s.red;
  const int len = p.seq_lens[row];
  const int begin = chunk * kAttnChunkTokens;
  const int n_pos = min(kAttnChunkTokens, len - begin);
  const int group = p.n_heads / p.n_kv_heads, hd = p.head_dim;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  // Scores: a warp per position (4 positions in flight), lanes over dimension pairs,
  // butterfly sums (fixed order).
  constexpr int kPosPerIter = 8;
  for (int i0 = warp * kPosPerIter; i0 < n_pos; i0 += kPosPerIter * (kThreads / 32)) {
    float dot[kPosPerIter][kG];
#pragma unroll
    for (int j = 0; j < kPosPerIter; ++j)
#pragma unroll
      for (int g = 0; g < kG; ++g) dot[j][g] = 0.0f;
    for (int d2 = lane; d2 < hd / 2; d2 += 32) {
      float2 kf[kPosPerIter];
#pragma unroll
      for (int j = 0; j < kPosPerIter; ++j) {
        const int i = min(i0 + j, n_pos - 1);
        kf[j] = __half22float2(rows.k_row(i)[d2]);
      }
#pragma unroll
      for (int g = 0; g < kG; ++g) {
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
      for (int g = 0; g < kG; ++g) {
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
      sink.ml[g * sink.ml_stride] = m;
      sink.ml[g * sink.ml_stride + 1] = l;
    }
  }
  __syncthreads();

  // Unnormalized output. Warp w takes positions w, w+4, ... (in order); a lane owns dimension
  // pairs lane, lane+32, ... and accumulates them for every query head of the group, so each
  // V element is loaded once per block; the warps' partials are then added in warp order.
  {
    float acc[kP][kG][2];
#pragma unroll
    for (int jj = 0; jj < kP; ++jj)
#pragma unroll
      for (int g = 0; g < kG; ++g) acc[jj][g][0] = acc[jj][g][1] = 0.0f;
#pragma unroll 8
    for (int i = warp; i < n_pos; i += kWarps) {
      const __half2* vrow = rows.v_row(i);
#pragma unroll
      for (int jj = 0; jj < kP; ++jj) {
        const int d2 = lane + 32 * jj;
        if (d2 < hd / 2) {
          const float2 vf = __half22float2(vrow[d2]);
#pragma unroll
          for (int g = 0; g < kG; ++g) {
            if (g < group) {
              const float e = score_s[g][i];
              acc[jj][g][0] += e * vf.x;
              acc[jj][g][1] += e * vf.y;
            }
          }
        }
      }
    }
#pragma unroll
    for (int jj = 0; jj < kP; ++jj) {
      const int d2 = lane + 32 * jj;
      if (d2 < hd / 2) {
#pragma unroll
        for (int g = 0; g < kG; ++g) {
          if (g < group) {
            red[warp][g][2 * d2] = acc[jj][g][0];
            red[warp][g][2 * d2 + 1] = acc[jj][g][1];
          }
        }
      }
    }
  }
  __syncthreads();
  for (int slot = threadIdx.x; slot < group * hd; slot += kThreads) {
    const int g = slot / hd, d = slot % hd;
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += red[w][g][d];
    sink.o[g * sink.o_stride + d] = o;
  }
}

// Merge of one head's n_chunks partials, in chunk order: the overall max m and 1 / l with
// l = sum_c l_c exp(m_c - m). Reads through L2 (the partials may come from other blocks of the
// same launch).
struct ChunkMerge {
  float m, inv_l;
};
__device__ __forceinline__ ChunkMerge merge_stats(const AttentionParams& p, int row, int head, int n_chunks) {
  const float* ml = p.part_ml + (static_cast<int64_t>(row) * p.n_heads + head) * p.max_chunks * 2;
  float m = -FLT_MAX;
  for (int c = 0; c < n_chunks; ++c) m = fmaxf(m, __ldcg(ml + 2 * c));
  float l = 0.0f;
  for (int c = 0; c < n_chunks; ++c) l += __ldcg(ml + 2 * c + 1) * expf(__ldcg(ml + 2 * c) - m);
  return ChunkMerge{m, 1.0f / l};
}

// Merged output of that head at dimension d: sum_c o_c exp(m_c - m) / l.
__device__ __forceinline__ float combine_chunks(const AttentionParams& p, int row, int head, int d, int n_chunks,
                                                const ChunkMerge& st) {
  const int64_t base = static_cast<int64_t>(row) * p.n_heads + head;
  const float* ml = p.part_ml + base * p.max_chunks * 2;
  float o = 0.0f;
  for (int c = 0; c < n_chunks; ++c) {
    o += __ldcg(p.part_o + (base * p.max_chunks + c) * p.head_dim + d) * expf(__ldcg(ml + 2 * c) - st.m);
  }
  return o * st.inv_l;
}

// The chunk-kernel instantiation for p's shape: [group index][head-dim pairs index] of the
// <kG, kP> tables in attention.cu and attention_decode.cu (kG 1, 2, 4, 8; kP 1, 2, 4;
// CHORUS_ATTENTION_VARIANTS builds them). Throws for shapes no instantiation serves.
struct AttentionVariant {
  int group_index, pairs_index;
};
inline AttentionVariant attention_variant(const AttentionParams& p, const char* what) {
  const int group = p.n_heads / p.n_kv_heads;
  if (group > kAttnMaxGroup || p.head_dim > kAttnMaxHeadDim || p.head_dim % 2 != 0) {
    throw CudaError(std::string(what) + ": unsupported shape (heads per kv head " + std::to_string(group) +
                    ", head_dim " + std::to_string(p.head_dim) + ")");
  }
  return AttentionVariant{group <= 1 ? 0 : (group <= 2 ? 1 : (group <= 4 ? 2 : 3)),
                          p.head_dim <= 64 ? 0 : (p.head_dim <= 128 ? 1 : 2)};
}

// The table of a kernel template K<kG, kP>'s instantiations, indexed like AttentionVariant.
#define CHORUS_ATTENTION_VARIANTS(K)                                                          \
  {                                                                                           \
    {K<1, 1>, K<1, 2>, K<1, 4>}, {K<2, 1>, K<2, 2>, K<2, 4>}, {K<4, 1>, K<4, 2>, K<4, 4>},    \
        {K<8, 1>, K<8, 2>, K<8, 4>}                                                           \
  }

}  // namespace chorus::cuda
