// Fused decode attention (attention.h, DecodeAttentionParams): RoPE of the new token's q and
// k, its K/V cache write, the chunked attention and the merge of the chunks, in one launch
// instead of three. The arithmetic of each stage is the one of the separate kernels
// (rope.cuh, attention_chunk.cuh), so prefill and decode agree.
//
// A block copies its chunk's cached K/V rows into shared memory before it waits for the
// previous kernel (pdl_wait): row lengths and block tables are uploaded before the step's first
// kernel, and every cached position but the new token's was written by an earlier step, so
// none of it depends on the kernel being waited for. The copies' latency then overlaps the
// previous kernel's tail and the query rotation instead of following them.
#include <cooperative_groups.h>

#include <cfloat>
#include <mutex>

#include "cuda/attention.h"
#include "cuda/attention_chunk.cuh"
#include "cuda/bulk_copy.cuh"
#include "cuda/cuda_check.h"
#include "cuda/launch.cuh"

namespace chorus::cuda {
namespace {

// K (rotated) and V of the row's new token for kv head kvh into the cache, and into the
// block's staged rows k_s / v_s.
__device__ void write_new_kv(const DecodeAttentionParams& d, const float* qkv, int row, int kvh, int pos, __half* k_s,
                             __half* v_s) {
  const AttentionParams& p = d.attn;
  const int hd = p.head_dim, q_dim = p.n_heads * hd, kv_dim = p.n_kv_heads * hd;
  const int64_t off = cache_row(p, row, kvh, pos);
  const float* k = qkv + q_dim + kvh * hd;
  for (int j = threadIdx.x; j < hd / 2; j += blockDim.x) {
    int i0, i1, freq;
    rope_pair(d.rope, j, i0, i1, freq);
    float a = k[i0], b = k[i1];
    rope_rotate(d.rope, pos, freq, a, b);
    const __half ha = __float2half_rn(a), hb = __float2half_rn(b);
    p.k_cache[off + i0] = k_s[i0] = ha;
    p.k_cache[off + i1] = k_s[i1] = hb;
  }
  const float* v = qkv + q_dim + kv_dim + kvh * hd;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) p.v_cache[off + i] = v_s[i] = __float2half_rn(v[i]);
}

// Copies the chunk's cached K and V rows except row `skip` (the new token's, not written yet)
// into k_s / v_s (rows head_dim halves apart), asynchronously: 16-byte pieces when head_dim
// is a multiple of 8 (the cache rows are then 16-byte aligned), else 4-byte ones.
__device__ void stage_cached_kv(const AttentionParams& p, const int64_t* row_off, int n_pos, int skip, __half* k_s,
                                __half* v_s) {
  const int hd = p.head_dim;
  const int piece = hd % 8 == 0 ? 8 : 2;  // halves per copy
  const int per_row = hd / piece;
  for (int v = threadIdx.x; v < n_pos * per_row; v += kAttnThreads) {
    const int i = v / per_row, e = (v % per_row) * piece;
    if (i == skip) continue;
    const int64_t src = row_off[i] + e;
    if (piece == 8) {
      cp_async16(k_s + i * hd + e, p.k_cache + src, 16);
      cp_async16(v_s + i * hd + e, p.v_cache + src, 16);
    } else {
      cp_async4(k_s + i * hd + e, p.k_cache + src);
      cp_async4(v_s + i * hd + e, p.v_cache + src);
    }
  }
  cp_async_commit();
}

// The last block of a (row, kv head) merges the chunk partials of the group's heads: a warp per
// head finds the max and the normalizer (lanes over chunks, fixed butterflies) and leaves each
// chunk's weight exp(m_c - m) / l in shared memory (the free P.V scratch); then every output
// element is the weighted sum of its chunks, loads unrolled so they are in flight together.
template <int kG, int kP>
__device__ void merge_chunks(const AttentionParams& p, ChunkSmem<kG, kP>& s, int row, int kvh, int n_chunks) {
  constexpr int kCap = kAttnWarps * kP * 64;  // chunk weights per head that fit in s.red
  const int group = p.n_heads / p.n_kv_heads, hd = p.head_dim;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (n_chunks > kCap) {  // contexts longer than kCap chunks: the plain per-element merge
    for (int slot = threadIdx.x; slot < group * hd; slot += kAttnThreads) {
      const int head = kvh * group + slot / hd, dim = slot % hd;
      p.out[static_cast<int64_t>(row) * p.out_stride + head * hd + dim] =
          __float2half_rn(combine_chunks(p, row, head, dim, n_chunks, merge_stats(p, row, head, n_chunks)));
    }
    return;
  }
  float* weights = &s.red[0][0][0];  // [kG][kCap]
  __syncthreads();                   // attend_chunk is done with s.red in every warp
  for (int g = warp; g < group; g += kAttnWarps) {
    const float* ml = p.part_ml + (static_cast<int64_t>(row) * p.n_heads + kvh * group + g) * p.max_chunks * 2;
    float m = -FLT_MAX;
    for (int c = lane; c < n_chunks; c += 32) m = fmaxf(m, __ldcg(ml + 2 * c));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float l = 0.0f;
    for (int c = lane; c < n_chunks; c += 32) {
      const float e = expf(__ldcg(ml + 2 * c) - m);
      weights[g * kCap + c] = e;
      l += __ldcg(ml + 2 * c + 1) * e;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    const float inv_l = 1.0f / l;
    for (int c = lane; c < n_chunks; c += 32) weights[g * kCap + c] *= inv_l;
  }
  __syncthreads();
  for (int slot = threadIdx.x; slot < group * hd; slot += kAttnThreads) {
    const int g = slot / hd, dim = slot % hd;
    const float* po = p.part_o + (static_cast<int64_t>(row) * p.n_heads + kvh * group + g) * p.max_chunks * hd + dim;
    float o = 0.0f;
#pragma unroll 8
    for (int c = 0; c < n_chunks; ++c) o = fmaf(__ldcg(po + static_cast<int64_t>(c) * hd), weights[g * kCap + c], o);
    p.out[static_cast<int64_t>(row) * p.out_stride + (kvh * group + g) * hd + dim] = __float2half_rn(o);
  }
}

// The merge when the chunk blocks of each (kv head, row) form a thread-block cluster (at most
// kAttnMaxClusterChunks chunks): every block left its partial in its own shared memory
// (s.q_s, s.ml_s); each reads the others' through distributed shared memory and writes a
// slice of the outputs. One cluster barrier replaces the partials' round trip through L2,
// the fence, the counter and the last block's two dependent loads. The arithmetic is
// merge_chunks' (lane c holds chunk c, the same butterflies, the same fused multiply-adds in
// chunk order), so a row gets the same bits whichever route its batch takes.
template <int kG, int kP>
__device__ void cluster_merge(const AttentionParams& p, ChunkSmem<kG, kP>& s, int row, int kvh, int n_chunks) {
  namespace cg = cooperative_groups;
  constexpr int kCap = kAttnMaxClusterChunks;
  cg::cluster_group cluster = cg::this_cluster();
  const int group = p.n_heads / p.n_kv_heads, hd = p.head_dim;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* weights = &s.red[0][0][0];  // [kG][kCap]; attend_chunk is done with s.red
  cluster.sync();                    // every chunk's partial is in place
  for (int g = warp; g < group; g += kAttnWarps) {
    float mc = -FLT_MAX, lc = 0.0f;
    if (lane < n_chunks) {
      const float* ml = cluster.map_shared_rank(&s.ml_s[g][0], lane);
      mc = ml[0];
      lc = ml[1];
    }
    float m = mc;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float e = lane < n_chunks ? expf(mc - m) : 0.0f;
    float l = lc * e;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    const float inv_l = 1.0f / l;
    if (lane < n_chunks) weights[g * kCap + lane] = e * inv_l;
  }
  __syncthreads();
  const int n_blocks = static_cast<int>(cluster.num_blocks());
  for (int slot = static_cast<int>(cluster.block_rank()) * kAttnThreads + threadIdx.x; slot < group * hd;
       slot += n_blocks * kAttnThreads) {
    const int g = slot / hd, dim = slot % hd;
    float o = 0.0f;
    for (int c = 0; c < n_chunks; ++c) o = fmaf(*cluster.map_shared_rank(&s.q_s[g][dim], c), weights[g * kCap + c], o);
    p.out[static_cast<int64_t>(row) * p.out_stride + (kvh * group + g) * hd + dim] = __float2half_rn(o);
  }
  cluster.sync();  // the other blocks' shared memory lives until every block has read it
}

// At least 6 blocks per multiprocessor (<= 80 registers): at M = 32 a step has ~800 active
// (row, kv head, chunk) blocks, each a chain of dependent memory round trips, so what counts
// is how many run at once (95 registers allowed 5 per multiprocessor: two waves).
template <int kG, int kP>
__global__ void __launch_bounds__(kAttnThreads, 6) attention_decode_kernel(const DecodeAttentionParams d) {
  __shared__ ChunkSmem<kG, kP> s;
  __shared__ int last_s;
  extern __shared__ __align__(16) __half kv_s[];  // [2][kAttnChunkTokens][head_dim]: K rows, V rows
  const AttentionParams& p = d.attn;
  const int chunk = blockIdx.x, kvh = blockIdx.y, row = blockIdx.z;
  const int len = p.seq_lens[row];
  const int begin = chunk * kAttnChunkTokens, pos = len - 1;
  const bool active = begin < len;
  const int hd = p.head_dim;
  __half* k_s = kv_s;
  __half* v_s = kv_s + kAttnChunkTokens * hd;
  if (active) {  // nothing here depends on the kernel waited for (file comment)
    const int n_pos = min(kAttnChunkTokens, len - begin);
    resolve_rows(p, s.row_off, chunk, kvh, row, n_pos);
    __syncthreads();
    stage_cached_kv(p, s.row_off, n_pos, pos - begin, k_s, v_s);
  }
  pdl_wait();
  pdl_trigger();
  if (!active && !d.cluster_merge) return;  // in a cluster every block takes part in the merge
  const int n_chunks = (len + kAttnChunkTokens - 1) / kAttnChunkTokens;
  const int group = p.n_heads / p.n_kv_heads;
  const float* qkv = d.qkv + static_cast<int64_t>(row) * d.qkv_stride;

  if (active) {
    for (int i = threadIdx.x; i < group * (hd / 2); i += kAttnThreads) {
      const int gi = i / (hd / 2), j = i % (hd / 2);
      int i0, i1, freq;
      rope_pair(d.rope, j, i0, i1, freq);
      const float* q = qkv + (kvh * group + gi) * hd;
      float a = q[i0], b = q[i1];
      rope_rotate(d.rope, pos, freq, a, b);
      s.q_s[gi][i0] = a * p.scale;
      s.q_s[gi][i1] = b * p.scale;
    }
    if (chunk == n_chunks - 1) write_new_kv(d, qkv, row, kvh, pos, k_s + (pos - begin) * hd, v_s + (pos - begin) * hd);
    cp_async_wait_all();
    __syncthreads();  // queries and every K/V row staged
    const ChunkSink sink = d.cluster_merge ? ChunkSink{&s.ml_s[0][0], 2, &s.q_s[0][0], kAttnMaxHeadDim}
                                           : global_sink(p, row, kvh, chunk);
    attend_chunk<kG, kP>(p, s, chunk, row, StagedRows{k_s, v_s, hd}, sink);
  }
  if (d.cluster_merge) {
    cluster_merge<kG, kP>(p, s, row, kvh, n_chunks);
    return;
  }

  __threadfence();  // this block's partials before its arrival
  __syncthreads();
  int* counter = d.counters + static_cast<int64_t>(row) * p.n_kv_heads + kvh;
  if (threadIdx.x == 0) last_s = atomicAdd(counter, 1) == n_chunks - 1;
  __syncthreads();
  if (!last_s) return;
  __threadfence();
  merge_chunks<kG, kP>(p, s, row, kvh, n_chunks);
  if (threadIdx.x == 0) *counter = 0;  // ready for the next launch
}

using DecodeKernel = void (*)(DecodeAttentionParams);
const DecodeKernel kDecodeKernels[4][3] = CHORUS_ATTENTION_VARIANTS(attention_decode_kernel);

// Staged K/V rows: 2 x kAttnChunkTokens x head_dim halves, 32 KB at head_dim 256, which with
// the largest instantiation's static 41 KB passes the 48 KB default.
constexpr int kStagedKvMaxBytes = 2 * kAttnChunkTokens * kAttnMaxHeadDim * 2;

}  // namespace

void prepare_attention_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const auto& by_pairs : kDecodeKernels)
      for (DecodeKernel k : by_pairs)
        CHORUS_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kStagedKvMaxBytes));
  });
}

void launch_attention_decode(const DecodeAttentionParams& d, cudaStream_t stream) {
  const AttentionParams& p = d.attn;
  const AttentionVariant v = attention_variant(p, "decode attention");
  if (p.n_rows > kAttnMaxRowsPerLaunch) {
    throw CudaError("decode attention: " + std::to_string(p.n_rows) + " rows, at most " +
                    std::to_string(kAttnMaxRowsPerLaunch) + " per launch");
  }
  prepare_attention_kernels();  // no-op after the first call; the backend makes that call at load
  const size_t kv_bytes = static_cast<size_t>(2 * kAttnChunkTokens * p.head_dim) * sizeof(__half);
  DecodeAttentionParams launch = d;
  launch.cluster_merge = p.grid_chunks <= kAttnMaxClusterChunks && p.n_rows <= d.cluster_max_rows ? 1 : 0;
  const unsigned cluster_x = launch.cluster_merge ? static_cast<unsigned>(p.grid_chunks) : 1u;
  launch_pdl_clustered(kDecodeKernels[v.group_index][v.pairs_index], dim3(p.grid_chunks, p.n_kv_heads, p.n_rows),
                       dim3(kAttnThreads), kv_bytes, dim3(cluster_x, 1, 1), stream, launch);
}

}  // namespace chorus::cuda
