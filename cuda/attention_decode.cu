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
//
// Where the partials merge through the counters (many rows), a block may compute several
// consecutive chunks one after another (DecodeAttentionParams::chunks_per_block): at 32 rows a
// step has up to 2,048 chunk blocks, several waves of short latency chains, and a block that
// takes more chunks rotates its queries once and ends in one arrival instead of several. Each
// chunk's partial is computed exactly as by a block of its own, so the bits do not change.
#include <cooperative_groups.h>

#include <algorithm>
#include <cfloat>
#include <mutex>

#include "cuda/attention.h"
#include "cuda/attention_chunk.cuh"
#include "cuda/attention_new_token.cuh"
#include "cuda/attention_row.h"
#include "cuda/bulk_copy.cuh"
#include "cuda/cuda_check.h"
#include "cuda/launch.cuh"
#include "cuda/occupancy.h"
#include "cuda/rope_table.h"
#include "cuda/step_trace.cuh"

namespace chorus::cuda {
namespace {

// Resolves chunk `chunk`'s cache rows into row_off and starts copying its cached K/V rows (all
// but the new token's at `pos`) into k_s / v_s.
__device__ void stage_chunk(const AttentionParams& p, int64_t* row_off, int chunk, int kvh, int row, int len,
                            __half* k_s, __half* v_s) {
  const int begin = chunk * kAttnChunkTokens;
  const int n_pos = min(kAttnChunkTokens, len - begin);
  resolve_rows(p, row_off, chunk, kvh, row, n_pos);
  __syncthreads();
  stage_cached_kv(p, row_off, n_pos, len - 1 - begin, k_s, v_s);
}

// The last block of a (row, kv head) merges the chunk partials of the group's heads: a warp per
// head finds the max and the normalizer (lanes over chunks, fixed butterflies) and leaves each
// chunk's weight exp(m_c - m) / l in shared memory (s.merge_w); then every output
// element is the weighted sum of its chunks, loads unrolled so they are in flight together.
template <int kG, int kP>
__device__ void merge_chunks(const AttentionParams& p, ChunkSmem<kG, kP>& s, int row, int kvh, int n_chunks) {
  constexpr int kCap = ChunkSmem<kG, kP>::kMergeCap;  // chunk weights per head that fit in s.merge_w
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
  float* weights = &s.merge_w[0][0];  // [kG][kCap]
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
__device__ void cluster_merge(const AttentionParams& p, ChunkSmem<kG, kP>& s, int row, int kvh, int n_chunks,
                              TraceSpan* trace) {
  namespace cg = cooperative_groups;
  constexpr int kCap = kAttnMaxClusterChunks;
  cg::cluster_group cluster = cg::this_cluster();
  const int group = p.n_heads / p.n_kv_heads, hd = p.head_dim;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* weights = &s.merge_w[0][0];  // [kG][kCap]
  cluster.sync();                    // every chunk's partial is in place
  trace_phase(trace, 3);
  for (int g = warp; g < group; g += kAttnWarps) {
    float mc = -FLT_MAX, lc = 0.0f;
    if (lane < n_chunks) {
      const float* ml = cluster.map_shared_rank(&s.ml_s[g][0], lane);
      mc = ml[0];
      lc = ml[1];
    }
    const float w = chunk_weight(mc, lc, lane < n_chunks);
    if (lane < n_chunks) weights[g * kCap + lane] = w;
  }
  __syncthreads();
  const int n_blocks = static_cast<int>(cluster.num_blocks());
  for (int slot = static_cast<int>(cluster.block_rank()) * kAttnThreads + threadIdx.x; slot < group * hd;
       slot += n_blocks * kAttnThreads) {
    const int g = slot / hd, dim = slot % hd;
    float part[kCap];  // every block's element first, so the remote loads are in flight together
#pragma unroll
    for (int c = 0; c < kCap; ++c) part[c] = c < n_chunks ? *cluster.map_shared_rank(&s.q_s[g][dim], c) : 0.0f;
    const float o = chunk_weighted_sum(part, weights + g * kCap, n_chunks);
    p.out[static_cast<int64_t>(row) * p.out_stride + (kvh * group + g) * hd + dim] = __float2half_rn(o);
  }
  cluster.sync();  // the other blocks' shared memory lives until every block has read it
}

// One block's work; the kernel below wraps it in the trace stamps (every return path ends there).
template <int kG, int kP>
__device__ __forceinline__ void attention_decode_block(const DecodeAttentionParams& d) {
  __shared__ ChunkSmem<kG, kP> s;
  __shared__ int last_s;
  extern __shared__ __align__(16) __half kv_s[];  // [2][kAttnChunkTokens][pitch]: K rows, V rows
  const AttentionParams& p = d.attn;
  const int kvh = blockIdx.y, row = blockIdx.z, per_block = d.chunks_per_block;
  const int first = blockIdx.x * per_block;  // this block's chunks: [first, first + n_mine)
  const int len = p.seq_lens[row];
  const int pos = len - 1, hd = p.head_dim;
  const int n_chunks = (len + kAttnChunkTokens - 1) / kAttnChunkTokens;
  const int n_mine = max(0, min(per_block, n_chunks - first));
  const bool active = n_mine > 0;
  const bool writes_kv = active && first + n_mine == n_chunks;  // the new token's chunk is this block's last
  __half* k_s = kv_s;
  const int pitch = staged_row_pitch(hd);
  __half* v_s = kv_s + kAttnChunkTokens * pitch;
  NewToken<kG, kP> tok;
  int64_t kv_off = 0;        // the new token's cache row
  if (active) {  // nothing here depends on the kernel waited for (file comment)
    stage_chunk(p, s.row_off, first, kvh, row, len, k_s, v_s);
    tok.angles(d, pos, writes_kv);
    if (writes_kv) kv_off = n_mine == 1 ? s.row_off[pos - first * kAttnChunkTokens] : cache_row(p, row, kvh, pos);
  }
  pdl_wait();
  trace_release(d.trace);
  pdl_trigger();
  if (!active && !d.cluster_merge) return;  // in a cluster every block takes part in the merge

  if (active) {
    tok.load(d, d.qkv + static_cast<int64_t>(row) * d.qkv_stride, kvh, writes_kv);
    tok.store(d, s.q_s, kv_off, writes_kv);
    trace_phase(d.trace, 0);
    for (int j = 0; j < n_mine; ++j) {
      const int chunk = first + j, begin = chunk * kAttnChunkTokens;
      if (j > 0) {
        __syncthreads();  // the previous chunk is done with the staged rows and s.row_off
        stage_chunk(p, s.row_off, chunk, kvh, row, len, k_s, v_s);
      }
      if (writes_kv && chunk == n_chunks - 1) tok.stage(d, k_s + (pos - begin) * pitch, v_s + (pos - begin) * pitch);
      cp_async_wait_all();
      __syncthreads();  // queries and every K/V row staged
      if (j == 0) trace_phase(d.trace, 1);
      const ChunkSink sink = d.cluster_merge ? ChunkSink{&s.ml_s[0][0], 2, &s.q_s[0][0], kAttnMaxHeadDim}
                                               : global_sink(p, row, kvh, chunk);
      attend_chunk<kG, kP>(p, s, chunk, row, StagedRows{k_s, v_s, pitch}, sink);
    }
    trace_phase(d.trace, 2);
  }
  if (d.cluster_merge) {
    cluster_merge<kG, kP>(p, s, row, kvh, n_chunks, d.trace);
    return;
  }

  __threadfence();  // this block's partials before its arrival
  __syncthreads();
  int* counter = d.counters + static_cast<int64_t>(row) * p.n_kv_heads + kvh;
  const int n_blocks = (n_chunks + per_block - 1) / per_block;  // the row's active blocks
  if (threadIdx.x == 0) last_s = atomicAdd(counter, 1) == n_blocks - 1;
  __syncthreads();
  if (!last_s) return;
  __threadfence();
  merge_chunks<kG, kP>(p, s, row, kvh, n_chunks);
  if (threadIdx.x == 0) *counter = 0;  // ready for the next launch
}

// At least 6 blocks per multiprocessor (<= 80 registers): at M = 32 a step has ~800 active
// (row, kv head, chunk) blocks, each a chain of dependent memory round trips, so what counts
// is how many run at once (95 registers allowed 5 per multiprocessor: two waves).
template <int kG, int kP>
__global__ void __launch_bounds__(kAttnThreads, 6) attention_decode_kernel(const DecodeAttentionParams d) {
  trace_entry(d.trace);
  attention_decode_block<kG, kP>(d);
  trace_exit(d.trace);
}

using DecodeKernel = void (*)(DecodeAttentionParams);
const DecodeKernel kDecodeKernels[4][3] = CHORUS_ATTENTION_VARIANTS(attention_decode_kernel);

// Staged K/V rows: 2 x kAttnChunkTokens x staged_row_pitch halves, 33 KB at head_dim 256, which
// with the largest instantiation's static 41 KB passes the 48 KB default.
constexpr int kStagedKvMaxBytes = staged_rows_bytes(kAttnMaxHeadDim);

// Chunks per block where the partials merge through the counters: the number of waves that
// one chunk per block would take, rounded to the nearest (at least 1). A wave of blocks running
// side by side hides more latency than a block doing one chunk after another, so a block takes
// no more chunks than that; but a last wave that is less than half full costs less than a
// second chunk in every block. Measured on an H100 (perf-notes v14b): 8B N = 16, 1.0-1.3 waves,
// ran 1-2 % faster at one chunk per block than at two; N = 32, 1.6-2.6 waves, 2.4-2.8 % faster
// at 2-3 chunks than at one.
int decode_chunks_per_block(const AttentionParams& p, int slots) {
  const int64_t blocks = int64_t{p.grid_chunks} * p.n_kv_heads * p.n_rows;
  return static_cast<int>(std::clamp<int64_t>((blocks + slots / 2) / slots, 1, p.grid_chunks));
}

}  // namespace

void prepare_attention_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const auto& by_pairs : kDecodeKernels)
      for (DecodeKernel k : by_pairs)
        CHORUS_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kStagedKvMaxBytes));
  });
  prepare_attention_row_kernels();
}

void launch_attention_decode(const DecodeAttentionParams& d, cudaStream_t stream) {
  const AttentionParams& p = d.attn;
  const AttentionVariant v = attention_variant(p, "decode attention");
  if (p.n_rows > kAttnMaxRowsPerLaunch) {
    throw CudaError("decode attention: " + std::to_string(p.n_rows) + " rows, at most " +
                    std::to_string(kAttnMaxRowsPerLaunch) + " per launch");
  }
  prepare_attention_kernels();  // no-op after the first call; the backend makes that call at load
  if (launch_attention_row(d, stream)) return;
  const size_t kv_bytes = static_cast<size_t>(staged_rows_bytes(p.head_dim));
  const DecodeKernel kernel = kDecodeKernels[v.group_index][v.pairs_index];
  DecodeAttentionParams launch = d;
  launch.cluster_merge = p.grid_chunks <= kAttnMaxClusterChunks && p.n_rows <= d.cluster_max_rows ? 1 : 0;
  if (launch.cluster_merge) {
    launch.chunks_per_block = 1;  // a cluster is the row's chunk blocks
  } else if (d.chunks_per_block > 0) {
    launch.chunks_per_block = std::min(d.chunks_per_block, p.grid_chunks);
  } else {
    const int slots = blocks_per_multiprocessor(reinterpret_cast<const void*>(kernel), kAttnThreads, kv_bytes) *
                      multiprocessor_count();
    launch.chunks_per_block = decode_chunks_per_block(p, std::max(1, slots));
  }
  const unsigned cluster_x = launch.cluster_merge ? static_cast<unsigned>(p.grid_chunks) : 1u;
  const unsigned grid_x = static_cast<unsigned>((p.grid_chunks + launch.chunks_per_block - 1) / launch.chunks_per_block);
  launch_pdl_clustered(kernel, dim3(grid_x, p.n_kv_heads, p.n_rows), dim3(kAttnThreads), kv_bytes,
                       dim3(cluster_x, 1, 1), stream, launch);
}

}  // namespace chorus::cuda
