// Decode attention, the row route (attention_row.h): one block per (row, kv head) stages all of
// the row's cached K/V rows (up to kAttnMaxClusterChunks chunks) in its shared memory before
// the wait, and its warps take the (chunk, query head) items one after another; each item is
// attend_head exactly as a chunk block runs it, the partials stay in the block's shared memory,
// and the merge is the cluster merge's arithmetic (chunk_weight, then the weighted sum in chunk
// order). So a row gets the same bits as through the chunk blocks, and the route is chosen per
// launch: what it saves is the cluster's two barriers and its remote reads (perf-notes v23:
// ~1.5 us at the first barrier and ~1.5 us of merge after it, 8B N = 1), and at 32 rows the
// counters' partials round trip. What it costs: a row's K/V (131 KB at 256 positions, head_dim
// 128) flows into one multiprocessor instead of eight, and the items share one
// multiprocessor's issue slots and shared-memory bandwidth. So at few rows a row may be split
// over a cluster of 2 or 4 blocks (row_split_*, perf-notes v23b): each stages and attends its
// share of the row's chunks and writes the partials into the first block's shared memory, which
// merges them as before after one cluster barrier. Where one block a multiprocessor would put a
// launch's blocks in two waves (the 8B at 32 rows), a block may stage V only after the scores,
// into K's place (row_kv_phases, two phases), so that two blocks share a multiprocessor.
#include <cooperative_groups.h>

#include <algorithm>
#include <cfloat>
#include <mutex>

#include "cuda/attention_chunk.cuh"
#include "cuda/attention_new_token.cuh"
#include "cuda/attention_row.h"
#include "cuda/cuda_check.h"
#include "cuda/launch.cuh"
#include "cuda/occupancy.h"
#include "cuda/step_trace.cuh"

namespace chorus::cuda {
namespace {

constexpr int kRowMaxPositions = kAttnMaxClusterChunks * kAttnChunkTokens;
constexpr int kAttnMaxRowParts = 4;  // blocks a split row (a cluster): each keeps >= 2 of the 8 chunks

// A row block's static shared memory: the group's queries (rotated, pre-scaled), the cache
// offsets of the row's positions, each item's (max, sum) and the chunks' merge weights.
template <int kG>
struct RowSmem {
  alignas(16) float q_s[kG][kAttnMaxHeadDim];
  int64_t row_off[kRowMaxPositions];
  float ml[kG][kAttnMaxClusterChunks][2];
  float weights[kG][kAttnMaxClusterChunks];
};

// Staged rows a block of a row split in n_parts holds: its share of grid_chunks chunks.
__host__ __device__ constexpr int row_part_rows(int grid_chunks, int n_parts) {
  return (grid_chunks + n_parts - 1) / n_parts * kAttnChunkTokens;
}

// Dynamic shared memory of a row block for p: the K rows and the V rows of its share of the
// chunks (staged_row_pitch apart; in two phases V takes K's place), then the items'
// unnormalized outputs [group][grid_chunks][head_dim], then in two phases the items' weights
// [group][grid_chunks][kAttnChunkTokens] between the scores and P.V.
size_t row_dynamic_bytes(const AttentionParams& p, int n_parts, int kv_phases) {
  const size_t rows = static_cast<size_t>(row_part_rows(p.grid_chunks, n_parts));
  const size_t items = static_cast<size_t>(p.n_heads / p.n_kv_heads) * p.grid_chunks;
  const size_t staged = (kv_phases == 2 ? 1 : 2) * rows * staged_row_pitch(p.head_dim) * sizeof(__half);
  return staged + items * p.head_dim * sizeof(float) + (kv_phases == 2 ? items * kAttnChunkTokens * sizeof(float) : 0);
}

template <int kG, int kP>
__device__ __forceinline__ void attention_row_block(const DecodeAttentionParams& d) {
  __shared__ RowSmem<kG> s;
  extern __shared__ __align__(16) unsigned char dyn_s[];
  const AttentionParams& p = d.attn;
  const int part = blockIdx.x, n_parts = gridDim.x;  // this block's share of the row (a cluster of n_parts)
  const int kvh = blockIdx.y, row = blockIdx.z;
  const int len = p.seq_lens[row], pos = len - 1, hd = p.head_dim;
  const int group = p.n_heads / p.n_kv_heads;
  const int n_chunks = (len + kAttnChunkTokens - 1) / kAttnChunkTokens;
  const int per_part = (n_chunks + n_parts - 1) / n_parts;  // the row's own chunks, split evenly
  const int c0 = min(n_chunks, part * per_part), c1 = min(n_chunks, c0 + per_part);  // this block's chunks
  const int p0 = c0 * kAttnChunkTokens, n_mine = max(0, min(len, c1 * kAttnChunkTokens) - p0);  // and positions
  const bool writes_kv = pos >= p0 && pos < p0 + n_mine;  // the new token's chunk is this block's
  const int pitch = staged_row_pitch(hd), rows_cap = row_part_rows(p.grid_chunks, n_parts);
  // Two phases (DecodeAttentionParams::row_kv_phases, set by the launch): the scores from the K
  // rows, then V into their place and P.V from the weights kept in e_s. The items' arithmetic
  // is attend_head's, split at its __syncwarp, so the bits are the same.
  const bool two_phases = d.row_kv_phases == 2;
  __half* k_s = reinterpret_cast<__half*>(dyn_s);
  __half* v_s = two_phases ? k_s : k_s + rows_cap * pitch;
  // [group][grid_chunks][hd]: every chunk's partial output, in the first block's shared memory
  // (the other blocks of a cluster write their chunks' there, like their (max, sum) in s.ml).
  float* part_o = reinterpret_cast<float*>(k_s + (two_phases ? 1 : 2) * rows_cap * pitch);
  float* e_s = part_o + group * p.grid_chunks * hd;  // two phases: [group][grid_chunks][32] weights
  float* sink_o = part_o;
  float(*sink_ml)[kAttnMaxClusterChunks][2] = s.ml;
  if (n_parts > 1) {
    namespace cg = cooperative_groups;
    sink_o = cg::this_cluster().map_shared_rank(part_o, 0);
    sink_ml = cg::this_cluster().map_shared_rank(s.ml, 0);
  }
  const bool token_thread = threadIdx.x < kAttnThreads;  // NewToken's threads

  // Nothing here depends on the kernel waited for (attention_decode.cu's file comment).
  NewToken<kG, kP> tok;
  for (int i = threadIdx.x; i < n_mine; i += blockDim.x) s.row_off[i] = cache_row(p, row, kvh, p0 + i);
  __syncthreads();
  if (two_phases) {
    stage_cached_kv<true, false>(p, s.row_off, n_mine, pos - p0, k_s, nullptr);
  } else {
    stage_cached_kv(p, s.row_off, n_mine, pos - p0, k_s, v_s);
  }
  if (token_thread) tok.angles(d, pos, writes_kv);
  const int64_t kv_off = writes_kv ? s.row_off[pos - p0] : 0;
  pdl_wait();
  trace_release(d.trace);
  pdl_trigger();

  if (token_thread) {
    tok.load(d, d.qkv + static_cast<int64_t>(row) * d.qkv_stride, kvh, writes_kv);
    tok.store(d, s.q_s, kv_off, writes_kv);
    if (writes_kv && two_phases) tok.template stage<true, false>(d, k_s + (pos - p0) * pitch, nullptr);
    if (writes_kv && !two_phases) tok.stage(d, k_s + (pos - p0) * pitch, v_s + (pos - p0) * pitch);
  }
  trace_phase(d.trace, 0);
  cp_async_wait_all();
  __syncthreads();  // queries and every K/V row staged
  trace_phase(d.trace, 1);

  // Items chunk-major, so the warps that run together read the same chunk's rows.
  const int warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5, lane = threadIdx.x & 31;
  // Item `item` of this block: head g of chunk c (the block's local-th), n_pos rows staged at
  // rows. Both passes over the items (two phases) take them from here.
  struct Item {
    int g, c, n_pos;
    StagedRows rows;
  };
  auto item_at = [&](int item) {
    const int local = item / group, g = item - local * group, c = c0 + local;
    const int first = local * kAttnChunkTokens * pitch;
    return Item{g, c, min(kAttnChunkTokens, len - c * kAttnChunkTokens), StagedRows{k_s + first, v_s + first, pitch}};
  };
  for (int item = warp; item < group * (c1 - c0); item += n_warps) {
    const auto [g, c, n_pos, rows] = item_at(item);
    if (two_phases) {
      e_s[(g * p.grid_chunks + c) * kAttnChunkTokens + lane] = attend_scores(p, s.q_s[g], n_pos, rows, &sink_ml[g][c][0]);
    } else {
      attend_head<kP>(p, s.q_s[g], n_pos, rows, &sink_ml[g][c][0], sink_o + (g * p.grid_chunks + c) * hd);
    }
  }
  if (two_phases) {
    __syncthreads();  // every score has read its K rows: V takes their place
    stage_cached_kv<false, true>(p, s.row_off, n_mine, pos - p0, nullptr, v_s);
    if (token_thread && writes_kv) tok.template stage<false, true>(d, nullptr, v_s + (pos - p0) * pitch);
    cp_async_wait_all();
    __syncthreads();
    for (int item = warp; item < group * (c1 - c0); item += n_warps) {
      const Item it = item_at(item);
      attend_pv<kP>(p, it.n_pos, it.rows, e_s[(it.g * p.grid_chunks + it.c) * kAttnChunkTokens + lane],
                    sink_o + (it.g * p.grid_chunks + it.c) * hd);
    }
  }
  if (n_parts > 1) {
    cooperative_groups::this_cluster().sync();  // every part's partials are in the first block
    if (part != 0) return;
  } else {
    __syncthreads();
  }
  trace_phase(d.trace, 2);

  for (int g = warp; g < group; g += n_warps) {  // a warp per head, lane c: chunk c's weight
    const bool has_chunk = lane < n_chunks;
    const float w = chunk_weight(has_chunk ? s.ml[g][lane][0] : -FLT_MAX, has_chunk ? s.ml[g][lane][1] : 0.0f,
                                 has_chunk);
    if (has_chunk) s.weights[g][lane] = w;
  }
  __syncthreads();
  trace_phase(d.trace, 3);
  for (int slot = threadIdx.x; slot < group * hd; slot += blockDim.x) {
    const int g = slot / hd, dim = slot - g * hd;
    const float* po = part_o + g * p.grid_chunks * hd + dim;
    float part[kAttnMaxClusterChunks];  // every chunk's element first, so the loads are in flight together
#pragma unroll
    for (int c = 0; c < kAttnMaxClusterChunks; ++c) part[c] = c < n_chunks ? po[c * hd] : 0.0f;
    const float o = chunk_weighted_sum(part, s.weights[g], n_chunks);
    p.out[static_cast<int64_t>(row) * p.out_stride + (kvh * group + g) * hd + dim] = __float2half_rn(o);
  }
}

// One block per multiprocessor is what the staged rows allow at 8 chunks of head_dim 128
// (~160 KB), so the bound is the warps, at 80 registers like the chunk blocks.
template <int kG, int kP>
__global__ void __launch_bounds__(kAttnRowMaxWarps * 32, 1) attention_row_kernel(const DecodeAttentionParams d) {
  trace_entry(d.trace);
  attention_row_block<kG, kP>(d);
  trace_exit(d.trace);
}

using RowKernel = void (*)(DecodeAttentionParams);
const RowKernel kRowKernels[4][3] = CHORUS_ATTENTION_VARIANTS(attention_row_kernel);
size_t row_max_dynamic_bytes[4][3];  // per kernel: the device's block limit less its static shared memory

// Warps per row block when the launch leaves the choice (row_warps 0). Where the launch's
// blocks all run at once, kAttnRowResidentWarps: a block's items are its time, and 16 warps
// run a split row's 16 items at once where 24 left 8 idle in every barrier (session 26, H100,
// against 24: 8B +1.0 % at N = 8 and +1.6 % at N = 2, 1B +1.7 % at N = 4 and 8, N = 1 and 16
// within +-0.5 %, 1B N = 2 -0.8 %; perf-notes). Past that,
// the most that keep as many blocks on a multiprocessor as its shared memory allows, since a
// second resident block stages its rows while the first attends: the 1B at 32 rows (88 KB a
// block) holds two blocks at 12 warps and one at 24 (H100: +9.8 % against +4.7 % over the
// chunk blocks), the 8B (162 KB) one either way (perf-notes v23).
int auto_row_warps(RowKernel kernel, int64_t n_blocks, size_t smem_bytes) {
  const void* k = reinterpret_cast<const void*>(kernel);
  const int64_t at_most_warps = blocks_per_multiprocessor(k, kAttnRowMaxWarps * 32, smem_bytes);
  if (n_blocks <= at_most_warps * multiprocessor_count()) return kAttnRowResidentWarps;
  const int by_smem = blocks_per_multiprocessor(k, kAttnWarps * 32, smem_bytes);
  for (int warps = kAttnRowMaxWarps; warps > kAttnWarps; warps -= 4) {
    if (blocks_per_multiprocessor(k, warps * 32, smem_bytes) >= by_smem) return warps;
  }
  return kAttnWarps;
}

// Staging phases when the launch leaves the choice (row_kv_phases 0): two where they let every
// block of the launch be resident at once and one phase does not. One block a multiprocessor
// (the 8B's 162 KB at 8 chunks) puts 32 rows' 256 blocks in two waves, and a second wave can
// neither stage its rows before the release nor while the first attends (perf-notes v23);
// staging V after the scores costs each block a wait for V within the launch, which a block
// sharing the multiprocessor covers. Where one phase does not fit a block's shared memory at
// all (max_bytes), the launch keeps taking the chunk blocks: two phases are measured only as
// the cure for two waves.
int auto_row_kv_phases(RowKernel kernel, int64_t n_blocks, size_t one_phase_bytes, size_t two_phase_bytes,
                       size_t max_bytes) {
  if (one_phase_bytes > max_bytes) return 1;
  const void* k = reinterpret_cast<const void*>(kernel);
  const int64_t n_sms = multiprocessor_count();
  const int64_t one = blocks_per_multiprocessor(k, kAttnWarps * 32, one_phase_bytes) * n_sms;
  const int64_t two = blocks_per_multiprocessor(k, kAttnWarps * 32, two_phase_bytes) * n_sms;
  return n_blocks > one && n_blocks <= two ? 2 : 1;
}

}  // namespace

void prepare_attention_row_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    int device = 0, optin = 0;
    CHORUS_CUDA_CHECK(cudaGetDevice(&device));
    CHORUS_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    for (int gi = 0; gi < 4; ++gi) {
      for (int pi = 0; pi < 3; ++pi) {
        cudaFuncAttributes attr{};
        CHORUS_CUDA_CHECK(cudaFuncGetAttributes(&attr, kRowKernels[gi][pi]));
        const int dynamic = std::max(0, optin - static_cast<int>(attr.sharedSizeBytes));
        CHORUS_CUDA_CHECK(
            cudaFuncSetAttribute(kRowKernels[gi][pi], cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic));
        row_max_dynamic_bytes[gi][pi] = static_cast<size_t>(dynamic);
      }
    }
  });
}

bool launch_attention_row(const DecodeAttentionParams& d, cudaStream_t stream) {
  const AttentionParams& p = d.attn;
  if (p.n_rows > d.row_max_rows || p.grid_chunks > kAttnMaxClusterChunks) return false;
  const AttentionVariant v = attention_variant(p, "decode attention");
  prepare_attention_row_kernels();  // no-op after the first call; the backend makes that call at load
  // Blocks a row: the largest power of two up to row_split_parts that the launch's chunks allow
  // and that still gives each block a multiprocessor (the counts the attention test covers). A
  // row block's items bind on its multiprocessor's issue (perf-notes v23); blocks sharing one
  // would split nothing but add the cluster barrier.
  int n_parts = 1;
  if (p.n_rows <= d.row_split_max_rows) {
    for (int parts = kAttnMaxRowParts; parts >= 2; parts /= 2) {
      if (parts <= d.row_split_parts && parts <= p.grid_chunks &&
          int64_t{parts} * p.n_rows * p.n_kv_heads <= multiprocessor_count()) {
        n_parts = parts;
        break;
      }
    }
  }
  const RowKernel kernel = kRowKernels[v.group_index][v.pairs_index];
  const size_t max_bytes = row_max_dynamic_bytes[v.group_index][v.pairs_index];
  const int64_t n_blocks = int64_t{p.n_rows} * p.n_kv_heads * n_parts;
  DecodeAttentionParams launch_d = d;
  launch_d.row_kv_phases = d.row_kv_phases == 1 || d.row_kv_phases == 2
                               ? d.row_kv_phases
                               : auto_row_kv_phases(kernel, n_blocks, row_dynamic_bytes(p, n_parts, 1),
                                                    row_dynamic_bytes(p, n_parts, 2), max_bytes);
  const size_t smem_bytes = row_dynamic_bytes(p, n_parts, launch_d.row_kv_phases);
  if (smem_bytes > max_bytes) return false;
  const int warps = d.row_warps > 0 ? std::clamp(d.row_warps, kAttnWarps, kAttnRowMaxWarps)  // NewToken needs kAttnThreads
                                    : auto_row_warps(kernel, n_blocks, smem_bytes);
  launch_pdl_clustered(kernel, dim3(n_parts, p.n_kv_heads, p.n_rows), dim3(warps * 32), smem_bytes,
                       dim3(n_parts, 1, 1), stream, launch_d);
  return true;
}

}  // namespace chorus::cuda
