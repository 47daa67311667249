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
// dimension pairs a lane owns (head_dim <= 64 kP). Both compile-time so that the unrolled
// loops issue no predicated-off work (the kernel is latency-bound at small M).
template <int kG, int kP>
struct ChunkSmem {
  // Chunk weights per head the merges can hold (merge_chunks: contexts of up to this many
  // chunks take the weighted route; cluster_merge uses the first kAttnMaxClusterChunks).
  static constexpr int kMergeCap = kAttnWarps * kP * 64;
  alignas(16) float q_s[kG][kAttnMaxHeadDim];  // the group's queries, RoPE applied, pre-scaled;
                                               // then (cluster merge) the chunk's unnormalized
                                               // output per head
  int64_t row_off[kAttnChunkTokens];
  float merge_w[kG][kMergeCap];  // the merges' chunk weights
  float ml_s[kG][2];             // cluster merge: the chunk's (max, sum) per head
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

// Halves between a chunk's consecutive staged K (and V) rows in shared memory: 8 more than
// head_dim, so that lanes reading 16-byte pieces of 8 consecutive rows hit 8 different 16-byte
// bank slots (attend_chunk's scores: a lane per position).
__host__ __device__ constexpr int staged_row_pitch(int head_dim) { return head_dim + 8; }
// Bytes of a chunk's staged K and V rows.
__host__ __device__ constexpr int staged_rows_bytes(int head_dim) {
  return 2 * kAttnChunkTokens * staged_row_pitch(head_dim) * 2;
}

// Where attend_chunk reads position i's K and V rows (i < the chunk's n_pos): in the cache
// (offsets from resolve_rows)...
struct CacheRows {
  const __half* k;
  const __half* v;
  const int64_t* row_off;
  __device__ const __half* k_row(int i) const { return k + row_off[i]; }
  __device__ const __half* v_row(int i) const { return v + row_off[i]; }
};
// ...or in a copy the block staged in shared memory (staged_row_pitch). The values are the
// same halves either way, so both give the same bits.
struct StagedRows {
  const __half* k;
  const __half* v;
  int pitch;
  __device__ const __half* k_row(int i) const { return k + i * pitch; }
  __device__ const __half* v_row(int i) const { return v + i * pitch; }
};

// The unnormalized P.V of one head over a chunk's n_pos rows into out[0, hd), position i's
// weight in lane i's e, for narrow heads (hd % 8 == 0, hd <= 64): the warp's lanes form groups
// of hd / 8, lane c of group pg accumulating halves [8c, 8c + 8) of rows pg, pg + n_groups, ...
// in order; then group 0 adds the other groups' sums in group order. A lane per dimension pair
// (chunk_pv_pairs) would spend n_pos iterations on one pair each at hd = 64: this takes 8 of
// 8 pairs each (H100: decode attention of the 1B 7.4 -> 6.4 us). At hd = 128 it measured
// slower than the pairs (perf-notes v19), so wider heads keep those.
template <typename Rows>
__device__ __forceinline__ void chunk_pv_pieces(const Rows& rows, int n_pos, int hd, float e, int lane, float* out) {
  const int lanes_per_row = hd / 8, n_groups = 32 / lanes_per_row;
  const int pg = lane / lanes_per_row, c = lane - pg * lanes_per_row;
  float acc[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) acc[k] = 0.0f;
  const int n_iter = (n_pos + n_groups - 1) / n_groups;
#pragma unroll 2
  for (int t = 0; t < n_iter; ++t) {
    const int i = pg + t * n_groups;
    const float w = __shfl_sync(0xffffffffu, e, i & 31);
    if (pg < n_groups && i < n_pos) {
      const uint4 v = reinterpret_cast<const uint4*>(rows.v_row(i))[c];
      const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 vf = __half22float2(h[k]);
        acc[2 * k] = fmaf(w, vf.x, acc[2 * k]);
        acc[2 * k + 1] = fmaf(w, vf.y, acc[2 * k + 1]);
      }
    }
  }
  float sum[8];  // every lane's own acc stays as it was for the other lanes' reads
#pragma unroll
  for (int k = 0; k < 8; ++k) sum[k] = acc[k];
  for (int g = 1; g < n_groups; ++g) {
    const int src = (lane + g * lanes_per_row) & 31;
#pragma unroll
    for (int k = 0; k < 8; ++k) sum[k] += __shfl_sync(0xffffffffu, acc[k], src);
  }
  if (pg == 0) {
    float4* o = reinterpret_cast<float4*>(out + 8 * c);
    o[0] = make_float4(sum[0], sum[1], sum[2], sum[3]);
    o[1] = make_float4(sum[4], sum[5], sum[6], sum[7]);
  }
}

// The same with lane L owning dimension pairs L, L + 32, ... (kP of them at most), going
// through the positions in order: heads wider than 64 or not a multiple of 8.
template <int kP, typename Rows>
__device__ __forceinline__ void chunk_pv_pairs(const Rows& rows, int n_pos, int hd, float e, int lane, float* out) {
  const int hd2 = hd / 2;
  float2 acc[kP];
#pragma unroll
  for (int jj = 0; jj < kP; ++jj) acc[jj] = make_float2(0.0f, 0.0f);
  for (int i = 0; i < n_pos; ++i) {
    const float w = __shfl_sync(0xffffffffu, e, i);
    const __half2* vrow = reinterpret_cast<const __half2*>(rows.v_row(i));
#pragma unroll
    for (int jj = 0; jj < kP; ++jj) {
      const int d2 = lane + 32 * jj;
      if (d2 < hd2) {
        const float2 vf = __half22float2(vrow[d2]);
        acc[jj].x = fmaf(w, vf.x, acc[jj].x);
        acc[jj].y = fmaf(w, vf.y, acc[jj].y);
      }
    }
  }
#pragma unroll
  for (int jj = 0; jj < kP; ++jj) {
    const int d2 = lane + 32 * jj;
    if (d2 < hd2) reinterpret_cast<float2*>(out)[d2] = acc[jj];
  }
}

// One query head against a chunk's n_pos rows is attend_head below (a warp; lane =
// threadIdx.x & 31), in two parts so that a row block may read V only after the scores
// (attention_row.cu's two phases) with the same arithmetic, hence the same bits. No block
// barrier: at small M a block is one warp per scheduler, running code it has not run before,
// so what counts is how many instructions each warp goes through, unrolled ones most.
//
// The scores: q is the head's query (RoPE applied, pre-scaled) in shared memory. Lane L
// computes position L's score whole (8-element pieces of its K row against the broadcast
// query, in order; no reduction across lanes), so the softmax runs in registers; leaves the
// chunk's (max, sum) at ml[0], ml[1] and returns lane L's weight exp(score - max).
template <typename Rows>
__device__ __forceinline__ float attend_scores(const AttentionParams& p, const float* q, int n_pos, const Rows& rows,
                                               float* ml) {
  static_assert(kAttnChunkTokens == 32, "a lane per chunk position");
  const int hd = p.head_dim, hd2 = hd / 2;
  const int lane = threadIdx.x & 31;
  const int my_pos = min(lane, n_pos - 1);  // lanes past the chunk's end repeat its last row (masked)
  float dot = 0.0f;
  if (hd % 8 == 0) {  // 16-byte pieces (the cache rows are 16-byte aligned then)
    const uint4* k8 = reinterpret_cast<const uint4*>(rows.k_row(my_pos));
    const float4* q4 = reinterpret_cast<const float4*>(q);
#pragma unroll 2
    for (int d8 = 0; d8 < hd / 8; ++d8) {
      const uint4 kv = k8[d8];
      const float4 qa = q4[2 * d8], qb = q4[2 * d8 + 1];
      const float2 k0 = __half22float2(*reinterpret_cast<const __half2*>(&kv.x));
      const float2 k1 = __half22float2(*reinterpret_cast<const __half2*>(&kv.y));
      const float2 k2 = __half22float2(*reinterpret_cast<const __half2*>(&kv.z));
      const float2 k3 = __half22float2(*reinterpret_cast<const __half2*>(&kv.w));
      float piece = qa.x * k0.x;
      piece = fmaf(qa.y, k0.y, piece);
      piece = fmaf(qa.z, k1.x, piece);
      piece = fmaf(qa.w, k1.y, piece);
      piece = fmaf(qb.x, k2.x, piece);
      piece = fmaf(qb.y, k2.y, piece);
      piece = fmaf(qb.z, k3.x, piece);
      piece = fmaf(qb.w, k3.y, piece);
      dot += piece;
    }
  } else {  // 4-byte pieces
    const __half2* k2 = reinterpret_cast<const __half2*>(rows.k_row(my_pos));
    for (int d2 = 0; d2 < hd2; ++d2) {
      const float2 kf = __half22float2(k2[d2]);
      dot = fmaf(q[2 * d2 + 1], kf.y, fmaf(q[2 * d2], kf.x, dot));
    }
  }
  const float score = lane < n_pos ? dot : -FLT_MAX;

  // Softmax partial: the chunk's max and sum of exp (fixed butterflies).
  float m = score;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  const float e = lane < n_pos ? expf(score - m) : 0.0f;
  float l = e;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
  if (lane == 0) {
    ml[0] = m;
    ml[1] = l;
  }
  return e;
}

// The unnormalized P.V of one head over a chunk's n_pos rows into o[0, hd), position i's weight
// in lane i's e (attend_scores).
template <int kP, typename Rows>
__device__ __forceinline__ void attend_pv(const AttentionParams& p, int n_pos, const Rows& rows, float e, float* o) {
  const int hd = p.head_dim, lane = threadIdx.x & 31;
  if (hd % 8 == 0 && hd <= 64) {
    chunk_pv_pieces(rows, n_pos, hd, e, lane, o);
  } else {
    chunk_pv_pairs<kP>(rows, n_pos, hd, e, lane, o);
  }
}

// Both: (max, sum) at ml[0], ml[1] and the unnormalized output at o[0, hd). Reads q, then
// (cluster merge) o may overwrite it, after the __syncwarp().
template <int kP, typename Rows>
__device__ __forceinline__ void attend_head(const AttentionParams& p, const float* q, int n_pos, const Rows& rows,
                                            float* ml, float* o) {
  const float e = attend_scores(p, q, n_pos, rows, ml);
  __syncwarp();  // every lane has read q (the cluster sink overwrites it)
  attend_pv<kP>(p, n_pos, rows, e, o);
}

// Needs s.q_s filled and the rows readable, then a __syncthreads(); ends with the partials
// written. A warp per query head (heads warp, warp + kAttnWarps, ...), attend_head each.
template <int kG, int kP, typename Rows>
__device__ __forceinline__ void attend_chunk(const AttentionParams& p, ChunkSmem<kG, kP>& s, int chunk, int row,
                                             const Rows& rows, const ChunkSink& sink) {
  const int len = p.seq_lens[row];
  const int n_pos = min(kAttnChunkTokens, len - chunk * kAttnChunkTokens);
  const int group = p.n_heads / p.n_kv_heads;
  for (int g = threadIdx.x >> 5; g < group; g += kAttnWarps) {
    attend_head<kP>(p, s.q_s[g], n_pos, rows, sink.ml + g * sink.ml_stride, sink.o + g * sink.o_stride);
  }
}

// The weight of lane c's chunk in a head's merged output, exp(m_c - m) / l with m the largest
// m_c and l = sum_c l_c exp(m_c - m) (fixed butterflies over the warp; lanes past n_chunks
// pass has_chunk false and get 0). The cluster's merge and the row block's call it;
// merge_chunks, which also takes more than 32 chunks, computes the same values in its own loop.
__device__ __forceinline__ float chunk_weight(float mc, float lc, bool has_chunk) {
  float m = has_chunk ? mc : -FLT_MAX;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  const float e = has_chunk ? expf(mc - m) : 0.0f;
  float l = has_chunk ? __fmul_rn(lc, e) : 0.0f;  // never fused with the first butterfly add
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
  return e * (1.0f / l);
}

// A merged output element from up to kAttnMaxClusterChunks chunks: part[c] (chunk c's
// unnormalized element, loaded beforehand so the loads are in flight together) times its
// weight w[c], fused multiply-adds in chunk order. The cluster's merge and the row block's
// both end here, so a row's bits do not depend on which of them its launch takes.
__device__ __forceinline__ float chunk_weighted_sum(const float (&part)[kAttnMaxClusterChunks], const float* w,
                                                   int n_chunks) {
  float o = 0.0f;
#pragma unroll
  for (int c = 0; c < kAttnMaxClusterChunks; ++c) {
    if (c < n_chunks) o = fmaf(part[c], w[c], o);
  }
  return o;
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
