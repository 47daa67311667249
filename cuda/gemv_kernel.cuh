#pragma once
// The batched GEMV kernel templates (see gemv.h); their launches are in gemv_launch.cuh, which
// one .cu per type family includes so that nvcc's work is spread over several translation units.
//
// A block is 4 or 8 warps (GemvShape); warp w owns the 16 rows [row0 + 16w, +16) of one matrix
// over one split of K. Each warp runs its own weight pipeline: lane 0 bulk-copies the warp's 16
// records of a tile (one contiguous run in the repacked layout) into a stage and the warp waits on that
// stage's mbarrier, so warps never wait for each other inside the loop. The first stages are
// requested before pdl_wait(): weights are constant, so they stream in while the previous
// kernel drains. Activations are staged once per chunk of tiles for the whole block: f16 rows
// by the copy engine (a tensor-map box per tile; 16-byte cp.async for one row, or where K is
// not a multiple of 64) into two buffers, the next chunk landing while the warps multiply the current one;
// normalized f32 rows (used for few rows only, see gemv.h) through registers; f16 rows of a
// residual times its norm weights (GemvIn::HalfRowScaled) like f16 rows, their 1 / rms applied
// to the accumulators. Past 8 rows by the copy engine, splits of several tiles use a ring of
// one-tile buffers instead, recycled without block barriers (the ring, below). Q4_K tiles take
// the integer-exact route of gemv_q4k_exact.cuh.
#include <cuda_fp16.h>

#include "cuda/bulk_copy.cuh"
#include "cuda/cuda_check.h"
#include "cuda/dequant_kernels.cuh"
#include "cuda/gemv.h"
#include "cuda/gemv_epilogue.cuh"
#include "cuda/gemv_q4k_exact.cuh"
#include "cuda/launch.cuh"
#include "cuda/mma.cuh"
#include "cuda/norm_rows.cuh"
#include "cuda/quant_tile.cuh"
#include "cuda/step_trace.cuh"
#include "cuda/weight_repack.h"

namespace chorus::cuda {

// Per-type weight pipeline: a stage is one warp's 16 records of one tile.
template <TensorType kType, int kNT>
struct GemvShape {
  static constexpr int kRec = record_bytes_of(kType);
  static constexpr int kWarpTile = kRowGroup * kRec;
  // 8 warps (128-row blocks) for more than 8 activation rows: a tile's activations (640 bytes a
  // row) then outweigh a 64-row block's weights, so twice the rows share each staged chunk, and
  // a multiprocessor holds 16 warps instead of 12 to hide the latencies of the products.
  // (Measured alternative: 4 warps of two row groups each, the same chunk sharing with 8 warps
  // per multiprocessor: no faster than 64-row blocks; perf-notes v8.) Records wider than 256
  // bytes (Q8_0, F16, F32) keep 4 warps so that their stages fit.
  static constexpr int kWarps = kNT > 1 && kWarpTile <= 4096 ? 2 * kGemvWarps : kGemvWarps;
  static constexpr int kBlockRows = kWarps * kRowGroup;
  // One row tile (M <= 8): Q4_K (2304 B) 4 stages, Q6_K (3584 B) and up 3, so 4 blocks fit a
  // multiprocessor. More rows: a tile takes kNT times the math, so fewer stages cover the
  // memory latency; the block's stages stay <= 18 KB (Q4_K 3 stages, Q6_K 2) so that with the
  // two activation buffers (16 KB each at M = 32) two blocks fit.
  static constexpr int kStages = kNT == 1 ? (kWarpTile <= 3072 ? 4 : (kWarpTile <= 8192 ? 3 : 2))
                                          : (kWarps * kWarpTile <= 18432 ? 3 : 2);
  // mbarriers (the warps' stages, then the x buffers' for the copy engine: two chunk buffers,
  // or a ring's full and sums barriers and its release counters), padded.
  static constexpr int kBarBytes = (kWarps * kStages * 8 + kGemvMaxRingBufs * (8 + 8 + 4) + 127) / 128 * 128;
  static constexpr int kWBytes = kWarps * kStages * kWarpTile;
  // 8 warps: <= 128 registers. 4 warps: none in the submitted build (they take <= 128); the
  // traced build (trace_span.h) bounds them to 128 as well, since its stamps took the Q4_K
  // kernel to 129 registers, 3 blocks a multiprocessor instead of 4, and so traced N <= 8 steps
  // ran ~20 % slower than the timed ones (perf-notes, session 26).
  static constexpr int kMinBlocks = kWarps > kGemvWarps ? 2 : (kStepTraceBuilt ? 4 : 1);
  // Q4_K past one column group: the block computes each tile's sub-block sums once
  // (gemv_q4k_exact.cuh) into the x region after the tiles: [2 chunk buffers][chunk tile] or
  // [ring buffer], then [column group][lane] fragments.
  static constexpr bool kBlockXsum = kType == TensorType::Q4_K && kNT > 1;
  static constexpr int kXsumTileBytes = kBlockXsum ? kNT * 32 * 4 : 0;
  static_assert(kWarpTile % 16 == 0, "pipeline layout");
};

// Shared-memory activations: a chunk holds its tiles one after another, gemv_x_tile_stride
// bytes apart (1024-byte aligned for the copy engine); within a tile, row n's 4 parts of 64
// halves (128 bytes each, part t = the elements lane t of a quad multiplies) follow one
// another, 512 bytes a row, and the 16-byte granule c of part t of row n is stored at granule
// slot c ^ (4 (n & 1) + t). That is the copy engine's 128-byte swizzle (granule XOR the
// 128-byte line's index within 1024 bytes), so a tensor-map box lands exactly as the other
// staging routes write it, and a quarter-warp's B loads (rows 2j, 2j+1, parts 0..3, one
// granule c) hit 8 distinct 16-byte bank slots with no padding. Rows past gemv_x_rows(M) do
// not exist; rows in [M, x_rows) are zeros (copy-engine fill or staged zeros).
__device__ __forceinline__ int x_swizzle(int n, int t) { return ((n & 1) << 2) | t; }
__device__ __forceinline__ int x_granule_offset(int n, int t, int c) {  // bytes within a tile
  return n * kGemvXTileBytes + t * 128 + ((c ^ x_swizzle(n, t)) << 4);
}

// 8 consecutive activations of row n from element k (zero past K), as f16.
__device__ __forceinline__ uint4 load_x8(const GemvInput& in, float rstd, int n, int k, int k_elems) {
  if (in.kind == GemvIn::NormF32) {
    float x[8], w[8];
    load_norm8(in, n, k, k_elems, x, w);
    return norm8_to_half(x, w, rstd);
  }
  const __half* src = in.x + static_cast<int64_t>(n) * in.x_stride + k;
  if (k + 8 <= k_elems && in.x_stride % 8 == 0) return *reinterpret_cast<const uint4*>(src);
  __half h[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) h[j] = k + j < k_elems ? src[j] : __float2half_rn(0.0f);
  uint4 u;
  memcpy(&u, h, 16);
  return u;
}

// The (row, tile) items of a staged chunk, rows outer: warp w takes items w, w + n_warps, ...
// and lane l copies the item's 16-byte vector l (elements 8l .. 8l+7 of the tile), so threads
// step through the chunk by adds, with divisions only at the start of a multi-tile chunk.
// (Dividing a flat vector index per copy cost ~55 instructions a vector; at M = 32, with a
// chunk per tile, staging took a quarter of the launch's issue slots; ncu, perf-notes v9.)
struct XItems {
  int n, tile;            // current item
  int step_n, step_tile;  // n_warps = step_n * n_tiles + step_tile
  int n_tiles;
  __device__ XItems(int n_tiles_) : n_tiles(n_tiles_) {
    const int warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    if (n_tiles == 1) {  // every double-buffered chunk past 16 rows: no divisions per tile
      n = warp;
      tile = step_tile = 0;
      step_n = n_warps;
      return;
    }
    n = warp / n_tiles;
    tile = warp - n * n_tiles;
    step_n = n_warps / n_tiles;
    step_tile = n_warps - step_n * n_tiles;
  }
  __device__ void next() {
    n += step_n;
    tile += step_tile;
    if (tile >= n_tiles) {
      tile -= n_tiles;
      ++n;
    }
  }
  // Where this lane's vector (part lane / 8, granule lane % 8) of the current item goes, in
  // bytes from the chunk's start (layout above).
  __device__ int dst(int tile_stride, int lane) const {
    return tile * tile_stride + x_granule_offset(n, lane >> 3, lane & 7);
  }
};

// Stages tiles [tile0, tile0 + n_tiles) of every row's activations (layout above), zeros for
// rows in [M, x_rows). Each thread loads up to 4 vectors before storing any, so a round costs
// one memory latency, not four.
__device__ inline void stage_x(const GemvParams& p, const float* rstd, uint8_t* xs, int tile0, int n_tiles) {
  constexpr int kBatch = 4;
  const int lane = threadIdx.x & 31, x_rows = gemv_x_rows(p.n_seqs), tile_stride = gemv_x_tile_stride(p.n_seqs, false);
  XItems it(n_tiles);
  while (it.n < x_rows) {
    uint4 val[kBatch];
    int dst[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      dst[j] = -1;
      if (it.n >= x_rows) continue;
      val[j] = make_uint4(0u, 0u, 0u, 0u);
      if (it.n < p.n_seqs) {
        const float scale = p.in.kind == GemvIn::NormF32 ? rstd[it.n] : 1.0f;
        val[j] = load_x8(p.in, scale, it.n, (tile0 + it.tile) * kTileElems + lane * 8, p.mats.k_elems);
      }
      dst[j] = it.dst(tile_stride, lane);
      it.next();
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (dst[j] >= 0) *reinterpret_cast<uint4*>(xs + dst[j]) = val[j];
    }
  }
}

// A residual output's rows [row0, row0 + 64) of every sequence into old_s[n][64], by 16-byte
// cp.async (zeros past the matrix's rows), for the block that adds the splits
// (kGemvEarlyResidual; launch_nt checks the alignment).
__device__ inline void prefetch_residual(const GemvParams& p, const BlockRows& br, float* old_s) {
  constexpr int kGranules = kGemvRowsPerBlock / 4;
  for (int e = threadIdx.x; e < p.n_seqs * kGranules; e += blockDim.x) {
    const int n = e / kGranules, r = br.row0 + (e % kGranules) * 4;
    const int valid = min(max(br.n_rows - r, 0), 4);
    const float* src = p.out.out + static_cast<int64_t>(n) * p.out.out_stride + br.col_begin + (valid > 0 ? r : 0);
    cp_async16(old_s + e * 4, src, static_cast<uint32_t>(valid * 4));
  }
  cp_async_commit();
}

// The same from f16 rows by 16-byte cp.async, for one row (gemv.cu says why) and for f16
// inputs the copy engine cannot take (K not a multiple of 64): nothing passes through
// registers, so the copies of the next chunk overlap the current chunk's products. Columns
// past K and rows past M are zero-filled. Needs x_stride % 8 == 0 (16-byte aligned sources,
// gemv_x_async); offsets are 32-bit (check_params).
__device__ inline void stage_x_async(const GemvParams& p, uint8_t* xs, int tile0, int n_tiles) {
  const int lane = threadIdx.x & 31, n_seqs = p.n_seqs, x_stride = p.in.x_stride, k_elems = p.mats.k_elems;
  const int x_rows = gemv_x_rows(n_seqs), tile_stride = gemv_x_tile_stride(n_seqs, false);
  const int k_lane = tile0 * kTileElems + lane * 8;
  const uint32_t xs_u32 = smem_u32(xs);
  const __half* x = p.in.x;
  for (XItems it(n_tiles); it.n < x_rows; it.next()) {
    const int k = k_lane + it.tile * kTileElems;
    const int valid = it.n < n_seqs ? min(max(k_elems - k, 0), 8) : 0;
    cp_async16(xs_u32 + it.dst(tile_stride, lane), x + (valid > 0 ? it.n * x_stride + k : 0), valid * 2);
  }
  cp_async_commit();
}

// The same by the copy engine (p.x_tma): one tensor-map box per tile (all x_rows rows, 4 parts),
// issued by thread 0 and completing on the buffer's mbarrier, which thread 0 arms with the
// chunk's bytes (boxes count whole, zero-filled rows and parts included). Costs the other
// threads nothing: at M = 32, 16-byte copies took ~120 instructions per warp and tile.
__device__ inline void stage_x_tma(const GemvParams& p, uint8_t* xs, uint64_t* bar, int tile0, int n_tiles) {
  if (threadIdx.x != 0) return;
  const int x_rows = gemv_x_rows(p.n_seqs), tile_stride = gemv_x_tile_stride(p.n_seqs, true);
  mbar_arrive_expect_tx(bar, static_cast<uint32_t>(n_tiles * x_rows * kGemvXTileBytes));
  for (int j = 0; j < n_tiles; ++j) tma_load_3d(xs + j * tile_stride, &p.x_map, 0, (tile0 + j) * 4, 0, bar);
}

// 1 / rms of each row from the producer's per-64-column sums of squares: warp w takes rows
// w, w + n_warps, ... (up to kGemvMaxSeqs / kGemvWarps of them) and issues the loads of all
// of them before adding any, so the block waits one memory latency, not one per row (a
// row at a time cost the 8-warp blocks four round trips at M = 32 before their first tile).
// Each row is summed as row_rstd_from_ss sums it: the same bits.
__device__ inline void load_rstd(const GemvParams& p, float* rstd) {
  constexpr int kMaxRowsPerWarp = kGemvMaxSeqs / kGemvWarps;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n_warps = blockDim.x >> 5;
  const int n_groups = (p.mats.k_elems + kNormGroup - 1) / kNormGroup;
  float s[kMaxRowsPerWarp];
#pragma unroll
  for (int j = 0; j < kMaxRowsPerWarp; ++j) s[j] = 0.0f;
  for (int g = lane; g < n_groups; g += 32) {
    float v[kMaxRowsPerWarp];
#pragma unroll
    for (int j = 0; j < kMaxRowsPerWarp; ++j) {
      const int n = warp + j * n_warps;
      v[j] = n < p.n_seqs ? p.in.ss[static_cast<int64_t>(n) * p.in.ss_stride + g] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kMaxRowsPerWarp; ++j) s[j] += v[j];
  }
#pragma unroll
  for (int j = 0; j < kMaxRowsPerWarp; ++j) {
    const int n = warp + j * n_warps;
    if (n >= p.n_seqs) break;  // warp-uniform
    const float r = rsqrtf(warp_sum(s[j]) / static_cast<float>(p.mats.k_elems) + p.in.eps);
    if (lane == 0) rstd[n] = r;
  }
  __syncthreads();
}

// GemvIn::HalfRowScaled: each accumulator times its activation row's 1 / rms (rstd, from
// load_rstd), before any split is added or output written, so every reduction route and every
// M scale alike. Lane (g, t) holds activation rows 2t, 2t + 1 of each column group.
template <int kNT>
__device__ __forceinline__ void scale_acc_rows(const GemvParams& p, const float* rstd, int lane, float (&acc)[kNT][4]) {
  if (p.in.kind != GemvIn::HalfRowScaled) return;
  const int t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = nt * 8 + 2 * t + (j & 1);
      acc[nt][j] *= n < p.n_seqs ? rstd[n] : 0.0f;
    }
  }
}

// One tile of the warp's 16 rows against every activation row: lane (g, t) dequantizes part t
// of rows g and g+8, chunk c giving the A fragments of k-steps 2c and 2c+1. x_lane: the shared
// address of lane (g, t)'s B granules in this tile with the swizzle in bits 4-6 (x_lane_offset):
// granule c of column group nt is at (x_lane ^ 16 c) + nt * 8 rows.
template <TensorType kType, int kNT>
__device__ __forceinline__ void warp_tile_mma(const uint8_t* wt, uint32_t x_lane, int lane, float (&acc)[kNT][4],
                                              const uint32_t* xsum_tile, uint64_t* xsum_bar, uint32_t xsum_parity) {
  if constexpr (kType == TensorType::Q4_K) {
    // integer-exact operands (gemv_q4k_exact.cuh)
    warp_tile_q4k_exact<kNT>(wt, x_lane, lane, acc, xsum_tile, xsum_bar, xsum_parity);
    return;
  }
  using L = PartLoader<kType>;
  constexpr int kRec = record_bytes_of(kType);
  const int g = lane >> 2, t = lane & 3;
  const typename L::Row ra = L::load(wt + g * kRec, t);
  const typename L::Row rb = L::load(wt + (g + 8) * kRec, t);
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    __half2 wa[4], wb[4];
    L::chunk(ra, c, wa);
    L::chunk(rb, c, wb);
    const uint32_t a0[4] = {h2_as_u32(wa[0]), h2_as_u32(wb[0]), h2_as_u32(wa[1]), h2_as_u32(wb[1])};
    const uint32_t a1[4] = {h2_as_u32(wa[2]), h2_as_u32(wb[2]), h2_as_u32(wa[3]), h2_as_u32(wb[3])};
    const uint32_t xc = x_lane ^ static_cast<uint32_t>(c << 4);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const uint4 b = ld_shared_v4(xc + nt * 8 * kGemvXTileBytes);
      mma_16816(acc[nt], a0, b.x, b.y);  // k-step 2c
      mma_16816(acc[nt], a1, b.z, b.w);  // k-step 2c+1
    }
  }
}

// Byte offset, within a tile, of lane (g, t)'s B granules, swizzle included (bits 4-6 of a row's
// part are free: tiles are 1024-byte aligned, parts 128). Up to 8 rows (one column group) a
// lane past M reads the last row instead of zeros: an mma column depends on its own B column
// only and for_each_acc drops it, so valid results keep their bits. Past 8 rows the rows are
// whole groups (gemv_x_rows) and every lane reads its own row, so rows g + 8 nt share g's
// swizzle.
template <int kNT>
__device__ __forceinline__ int x_lane_offset(int n_seqs, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const int n = kNT == 1 ? min(g, n_seqs - 1) : g;
  return n * kGemvXTileBytes + t * 128 + (x_swizzle(n, t) << 4);
}

// One tile of x (all x_rows rows) by the copy engine into dst, completing on bar; any one thread.
__device__ __forceinline__ void issue_x_tile(const GemvParams& p, uint8_t* dst, uint64_t* bar, int tile) {
  mbar_arrive_expect_tx(bar, static_cast<uint32_t>(gemv_x_rows(p.n_seqs) * kGemvXTileBytes));
  tma_load_3d(dst, &p.x_map, 0, tile * 4, 0, bar);
}

// A warp's weight stage for its tile i (i >= 0) and the phase parity of that use. Unsigned, so
// that the modulo and division by the compile-time stage count are a mask and a shift (or a
// multiply-high): on int they were ~8 instructions a tile for the sign fix-ups.
template <int kStages>
__device__ __forceinline__ int stage_slot(int i) {
  return static_cast<int>(static_cast<uint32_t>(i) % kStages);
}
template <int kStages>
__device__ __forceinline__ uint32_t stage_parity(int i) {
  return (static_cast<uint32_t>(i) / kStages) & 1u;
}

template <TensorType kType, int kNT>
__device__ __forceinline__ void issue_tile(uint64_t* bars, uint8_t* stages, const uint8_t* src, int i) {
  using S = GemvShape<kType, kNT>;
  const int slot = stage_slot<S::kStages>(i);
  mbar_arrive_expect_tx(bars + slot, S::kWarpTile);
  bulk_copy_g2s(stages + slot * S::kWarpTile, src + static_cast<int64_t>(i) * S::kWarpTile, S::kWarpTile, bars + slot);
}

// One block's work: the rows `br` over split blockIdx.y. smem: [barriers | warps' weight stages |
// pad to 1024 | x chunk(s) / vals], the launch's dynamic shared memory.
template <TensorType kType, int kNT>
__device__ __forceinline__ void gemv_block(const GemvParams& p, const BlockRows& br, uint8_t* smem, float* rstd_s,
                                           int& last_s) {
  using S = GemvShape<kType, kNT>;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tile_begin = blockIdx.y * p.split.tiles_per_split;
  const int n_my = max(0, min(p.mats.n_tiles, tile_begin + p.split.tiles_per_split) - tile_begin);
  const int warp_row0 = br.row0 + warp * kRowGroup;
  const bool warp_active = warp_row0 < br.n_rows;

  uint64_t* bars = reinterpret_cast<uint64_t*>(smem) + warp * S::kStages;
  uint64_t* x_bars = reinterpret_cast<uint64_t*>(smem) + S::kWarps * S::kStages;  // p.x_tma: one per buffer
  // The ring (p.x_ring_bufs > 0): full barriers, sums barriers (Q4_K), release counters.
  const int n_ring = p.x_ring_bufs;
  uint64_t* ring_full = x_bars;
  uint64_t* ring_sums = x_bars + n_ring;
  int* ring_count = reinterpret_cast<int*>(x_bars + 2 * n_ring);
  uint8_t* stages = smem + S::kBarBytes + warp * S::kStages * S::kWarpTile;
  uint8_t* xs = smem + S::kBarBytes + S::kWBytes;
  if (p.x_tma) xs += (1024 - smem_u32(xs) % 1024) % 1024;  // the swizzle's period (launch_nt adds the slack)
  const uint8_t* w_src =
      br.w + (static_cast<int64_t>(warp_row0 / kRowGroup) * p.mats.n_tiles + tile_begin) * S::kWarpTile;
  if (lane == 0) {
    for (int s = 0; s < S::kStages; ++s) mbar_init(bars + s, 1);
    if (p.x_tma && warp == 0) {
      if (n_ring > 0) {
        for (int b = 0; b < n_ring; ++b) {
          mbar_init(ring_full + b, 1);
          mbar_init(ring_sums + b, kNT);
          ring_count[b] = 0;
        }
      } else {
        mbar_init(x_bars, 1);
        mbar_init(x_bars + 1, 1);
      }
    }
    if constexpr (kNT == 1) {
      if (p.push_smem_offset > 0 && warp == 0 && blockIdx.y == 0) {  // kGemvEarlyPush: split 0 receives
        mbar_init(reinterpret_cast<uint64_t*>(smem + p.push_smem_offset), (p.split.n_splits - 1) * S::kWarps);
      }
    }
    mbar_fence_init();
  }
  __syncwarp();
  // kGemvEarlyPush: the receive barrier is initialized before any block of the cluster pushes
  // (push_splits waits for this arrival); off the critical path, before pdl_wait.
  if constexpr (kNT == 1) {
    if (p.push_smem_offset > 0) cluster_arrive_release();
  }
  if (warp_active && lane == 0) {
    for (int i = 0; i < S::kStages && i < n_my; ++i) issue_tile<kType, kNT>(bars, stages, w_src, i);
  }
  if (p.x_tma) __syncthreads();  // every thread waits on the x barriers: initialized for all
  pdl_wait();
  trace_release(p.trace);
  pdl_trigger();
  // kGemvEarlyResidual: launch_nt sets the offset where this applies (one column group, a
  // residual output, the splits added in a cluster or a single split).
  float* old_s = nullptr;
  if constexpr (kNT == 1) {
    if (p.resid_smem_offset > 0 && blockIdx.y == 0) {
      old_s = reinterpret_cast<float*>(smem + p.resid_smem_offset);
      prefetch_residual(p, br, old_s);
    }
  }
  if (p.in.kind == GemvIn::NormF32) load_rstd(p, rstd_s);

  float acc[kNT][4];
#pragma unroll
  for (int i = 0; i < kNT; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;
  const int chunk = p.x_chunk_tiles, tile_stride = gemv_x_tile_stride(p.n_seqs, p.x_tma);
  const int x_lane = x_lane_offset<kNT>(p.n_seqs, lane);
  if constexpr (kNT > 1) {
    if (n_ring > 0) {
      // The ring: tile i of the split in buffer i % n_ring. Each warp waits for the tile's
      // bytes, multiplies it, and counts itself done with the buffer; the last warp to finish
      // refills it with tile i + n_ring. No block barrier: a warp waits only for its data, and
      // the copies run up to n_ring tiles ahead of the slowest warp. For Q4_K, kNT warps
      // (rotating with i) compute the tile's sub-block sums first and signal them on the
      // buffer's sums barrier; every warp waits for them before its min products.
      uint32_t* ring_xsum = reinterpret_cast<uint32_t*>(xs + n_ring * tile_stride);
      if (threadIdx.x == 0) {
        for (int b = 0; b < n_ring && b < n_my; ++b) issue_x_tile(p, xs + b * tile_stride, ring_full + b, tile_begin + b);
      }
      // The row scales are needed only after the tiles: their loads go behind the first copies.
      if (p.in.kind == GemvIn::HalfRowScaled) load_rstd(p, rstd_s);
      int b = 0;
      uint32_t phase = 0;
      for (int i = 0; i < n_my; ++i) {
        uint8_t* xb = xs + b * tile_stride;
        uint32_t* xsum_tile = ring_xsum + b * kNT * 32;
        mbar_wait(ring_full + b, phase);
        if (i == 0) trace_phase(p.trace, 0);
        if constexpr (S::kBlockXsum) {
          const int nt = (warp - i) & (S::kWarps - 1);
          if (nt < kNT) {
            xsum_tile[nt * 32 + lane] = q4k_xsum_group(smem_u32(xb) + x_lane + nt * 8 * kGemvXTileBytes, lane);
            __syncwarp();
            if (lane == 0) mbar_arrive(ring_sums + b);
          }
        }
        if (warp_active) {
          const int slot = stage_slot<S::kStages>(i);
          mbar_wait(bars + slot, stage_parity<S::kStages>(i));
          if (i == 0) trace_phase(p.trace, 1);
          warp_tile_mma<kType, kNT>(stages + slot * S::kWarpTile, smem_u32(xb) + x_lane, lane, acc, xsum_tile,
                                    ring_sums + b, phase);
          __syncwarp();  // the whole warp has read the stage before it is refilled
          if (lane == 0 && i + S::kStages < n_my) issue_tile<kType, kNT>(bars, stages, w_src, i + S::kStages);
        }
        // The warp's loads of the buffer have returned (their values fed the products before
        // this point), so once every warp has counted itself the copy engine may overwrite it
        // (the same argument as a warp's weight stage, bulk_copy.cuh; a block-scope fence
        // before the count, tried first, bought nothing measurable).
        __syncwarp();
        if (lane == 0 && atomicAdd(ring_count + b, 1) == S::kWarps - 1) {
          ring_count[b] = 0;
          if (i + n_ring < n_my) issue_x_tile(p, xb, ring_full + b, tile_begin + i + n_ring);
        }
        if (++b == n_ring) {
          b = 0;
          phase ^= 1u;
        }
      }
      trace_phase(p.trace, 2);
      scale_acc_rows<kNT>(p, rstd_s, lane, acc);
      gemv_epilogue<kNT, S::kBlockRows>(p, br, acc, reinterpret_cast<float*>(xs), last_s, nullptr, smem);
      return;
    }
  }
  const bool async_x = gemv_x_async(p.in);
  const int buf_bytes = chunk * tile_stride;  // one chunk buffer (two when async_x)
  uint32_t* xsum = reinterpret_cast<uint32_t*>(xs + (async_x ? 2 : 1) * buf_bytes);
  // The sub-block sums of chunk ci's tiles (S::kBlockXsum), a (tile, column group) per warp.
  auto block_xsum = [&](const uint8_t* xc, int ci, int n_tiles) {
    uint32_t* dst = xsum + (ci & 1) * chunk * kNT * 32;
    for (int item = warp; item < n_tiles * kNT; item += S::kWarps) {
      const int tile = item / kNT, nt = item % kNT;
      dst[item * 32 + lane] =
          q4k_xsum_group(smem_u32(xc) + x_lane + tile * tile_stride + nt * 8 * kGemvXTileBytes, lane);
    }
  };
  // Stages chunk ci (tiles from tile0) into its buffer, when x is double-buffered.
  auto stage_async = [&](int ci, int tile0, int n_tiles) {
    uint8_t* buf = xs + (ci & 1) * buf_bytes;
    if (p.x_tma) {
      stage_x_tma(p, buf, x_bars + (ci & 1), tile0, n_tiles);
    } else {
      stage_x_async(p, buf, tile0, n_tiles);
    }
  };
  if (async_x && n_my > 0) stage_async(0, tile_begin, min(chunk, n_my));
  if (p.in.kind == GemvIn::HalfRowScaled) load_rstd(p, rstd_s);  // behind the first chunk's copies
  for (int c0 = 0, ci = 0; c0 < n_my; c0 += chunk, ++ci) {
    const int n_chunk = min(chunk, n_my - c0);
    uint8_t* xc = xs + (async_x ? (ci & 1) * buf_bytes : 0);
    if (async_x) {
      if (p.x_tma) {
        mbar_wait(x_bars + (ci & 1), static_cast<uint32_t>(ci >> 1) & 1u);  // buffer ci & 1's phase ci / 2
      } else {
        cp_async_wait_all();
      }
      // The copy engine's bytes are visible to every thread that waited on the barrier.
      if constexpr (S::kBlockXsum) if (p.x_tma) block_xsum(xc, ci, n_chunk);
      // Chunk ci has landed for every thread, and every warp is done with chunk ci - 1, whose
      // buffer the next chunk refills.
      __syncthreads();
      if (ci == 0) trace_phase(p.trace, 0);
      if constexpr (S::kBlockXsum) {
        if (!p.x_tma) {
          block_xsum(xc, ci, n_chunk);
          __syncthreads();
        }
      }
      if (c0 + chunk < n_my) stage_async(ci + 1, tile_begin + c0 + chunk, min(chunk, n_my - c0 - chunk));
    } else {
      if (c0 > 0) __syncthreads();  // every warp is done with the previous chunk
      stage_x(p, rstd_s, xc, tile_begin + c0, n_chunk);
      __syncthreads();
      if (ci == 0) trace_phase(p.trace, 0);
      if constexpr (S::kBlockXsum) {
        block_xsum(xc, ci, n_chunk);
        __syncthreads();
      }
    }
    if (!warp_active) continue;
    const uint32_t xc_lane = smem_u32(xc) + x_lane;
    for (int i = c0; i < c0 + n_chunk; ++i) {
      const int slot = stage_slot<S::kStages>(i);
      mbar_wait(bars + slot, stage_parity<S::kStages>(i));
      if (i == 0) trace_phase(p.trace, 1);
      warp_tile_mma<kType, kNT>(stages + slot * S::kWarpTile, xc_lane + (i - c0) * tile_stride, lane, acc,
                                xsum + ((ci & 1) * chunk + i - c0) * kNT * 32, nullptr, 0);
      __syncwarp();  // the whole warp has read the stage before it is refilled
      if (lane == 0 && i + S::kStages < n_my) issue_tile<kType, kNT>(bars, stages, w_src, i + S::kStages);
    }
  }
  trace_phase(p.trace, 2);
  scale_acc_rows<kNT>(p, rstd_s, lane, acc);
  gemv_epilogue<kNT, S::kBlockRows>(p, br, acc, reinterpret_cast<float*>(xs), last_s, old_s, smem);
}

template <TensorType kType, int kNT>
__global__ void __launch_bounds__(GemvShape<kType, kNT>::kWarps * 32, GemvShape<kType, kNT>::kMinBlocks)
    gemv_kernel(const __grid_constant__ GemvParams p) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ float rstd_s[kGemvMaxSeqs];
  __shared__ int last_s;
  using S = GemvShape<kType, kNT>;
  trace_entry(p.trace);
  gemv_block<kType, kNT>(p, locate_block(p.mats, 0, p.mats.n_mats, blockIdx.x, S::kBlockRows), smem, rstd_s, last_s);
  trace_exit(p.trace);
}

// Matrices of two types in one launch (gemv.h, launch_gemv_pair): the blocks of matrices
// [0, n_mats_a) run kA's pipeline, the others kB's, each exactly as in a launch of its own, so
// the bits are the same; the step saves the launch (and its latency chain) of the second type.
template <TensorType kA, TensorType kB, int kNT>
__global__ void __launch_bounds__(GemvShape<kA, kNT>::kWarps * 32, GemvShape<kA, kNT>::kMinBlocks)
    gemv_pair_kernel(const __grid_constant__ GemvParams p) {
  using SA = GemvShape<kA, kNT>;
  static_assert(SA::kWarps == GemvShape<kB, kNT>::kWarps, "both types' blocks cover the same rows");
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ float rstd_s[kGemvMaxSeqs];
  __shared__ int last_s;
  const int blocks_a = gemv_row_blocks_of(p.mats, 0, p.mats.n_mats_a, SA::kBlockRows);
  trace_entry(p.trace);
  if (static_cast<int>(blockIdx.x) < blocks_a) {
    gemv_block<kA, kNT>(p, locate_block(p.mats, 0, p.mats.n_mats_a, blockIdx.x, SA::kBlockRows), smem, rstd_s, last_s);
  } else {
    gemv_block<kB, kNT>(p, locate_block(p.mats, p.mats.n_mats_a, p.mats.n_mats, blockIdx.x - blocks_a, SA::kBlockRows),
                        smem, rstd_s, last_s);
  }
  trace_exit(p.trace);
}

}  // namespace chorus::cuda
