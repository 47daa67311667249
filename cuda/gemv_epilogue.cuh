#pragma once
// The GEMV's output stage (gemv.h): split partials, and for the other output kinds the
// reduction of the splits (within a thread-block cluster, or in the last block of each row
// block to finish), followed by the fused operation on each 64-row unit of the block.
// The block's results sit in shared memory as vals[n_seqs][kBlockRows] (64 or 128 rows).
// Included by gemv_kernel.cuh only.
#include <cooperative_groups.h>

#include <cfloat>
#include <climits>

#include "cuda/cluster_push.cuh"
#include "cuda/gemv.h"
#include "cuda/step_trace.cuh"
#include "cuda/warp_reduce.cuh"
#include "cuda/weight_repack.h"

namespace chorus::cuda {

// The output rows a block computes (one or two 64-row units): which matrix, where they start.
struct BlockRows {
  const uint8_t* w = nullptr;
  const float* bias = nullptr;
  int n_rows = 0;
  int col_begin = 0;
  int row0 = 0;  // first row of the block within the matrix
};

// Block bx of the blocks over matrices [first, last).
__device__ __forceinline__ BlockRows locate_block(const GemvMats& m, int first, int last, int bx, int block_rows) {
  int mat = first, rb = bx;
#pragma unroll
  for (int i = 0; i < kGemvMaxMats; ++i) {
    const int blocks = (gemv_mat_entry(m.n_rows, i) + block_rows - 1) / block_rows;
    if (i == mat && i + 1 < last && rb >= blocks) {
      rb -= blocks;
      mat = i + 1;
    }
  }
  BlockRows r;
  r.w = gemv_mat_entry(m.w, mat);
  r.bias = gemv_mat_entry(m.bias, mat);
  r.n_rows = gemv_mat_entry(m.n_rows, mat);
  r.col_begin = gemv_mat_entry(m.col_begin, mat);
  r.row0 = rb * block_rows;
  return r;
}

// Calls f(seq, local_row, value) for every valid accumulator of this lane: the mma C layout
// puts (row g, cols 2t, 2t+1) in c[0..1] and (row g+8, same cols) in c[2..3].
template <int kNT, typename F>
__device__ __forceinline__ void for_each_acc(const BlockRows& br, int n_seqs, int warp, int lane,
                                             const float (&acc)[kNT][4], F&& f) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = nt * 8 + 2 * t + (j & 1);
      const int r = warp * 16 + g + (j >> 1) * 8;
      if (n < n_seqs && br.row0 + r < br.n_rows) f(n, r, acc[nt][j]);
    }
  }
}

// A new residual value's share of the next RMSNorm's input (GemvOutput::xw_h), where asked.
__device__ __forceinline__ void store_xw(const GemvParams& p, int n, int col, float v) {
  if (p.out.xw_h == nullptr) return;
  p.out.xw_h[static_cast<int64_t>(n) * p.out.xw_h_stride + col] = __float2half_rn(v * p.out.xw_norm_w[col]);
}

// One 64-row unit of the block (`br` starts at it, its values at vals[n * vals_stride + r]).
// x += v for the unit's 64 columns, then the sum of squares of the new values of these
// columns (one 64-column group) in a fixed tree: lanes hold columns (lane, lane + 32).
// old_s: the unit's residual rows [n][64] prefetched into shared memory (prefetch_residual), or
// null to load them here.
__device__ inline void epilogue_residual(const GemvParams& p, const BlockRows& br, float* vals, int vals_stride,
                                         const float* old_s) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  constexpr int kBatch = 4;
  const int total = p.n_seqs * kGemvRowsPerBlock;
  for (int e0 = threadIdx.x; e0 < total; e0 += kBatch * blockDim.x) {
    float old[kBatch];
    float* x[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int e = e0 + j * blockDim.x;
      const int n = e / kGemvRowsPerBlock, row = br.row0 + e % kGemvRowsPerBlock;
      x[j] = e < total && row < br.n_rows
                 ? p.out.out + static_cast<int64_t>(n) * p.out.out_stride + br.col_begin + row
                 : nullptr;
      old[j] = !x[j] ? 0.0f : (old_s ? old_s[e] : *x[j]);
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int e = e0 + j * blockDim.x;
      if (e >= total) continue;
      float* val = vals + e / kGemvRowsPerBlock * vals_stride + e % kGemvRowsPerBlock;
      float sq = 0.0f;
      if (x[j]) {
        const float v = old[j] + *val;
        *x[j] = v;
        sq = v * v;
        store_xw(p, e / kGemvRowsPerBlock, br.col_begin + br.row0 + e % kGemvRowsPerBlock, v);
      }
      *val = sq;
    }
  }
  __syncthreads();
  const int group = (br.col_begin + br.row0) / kNormGroup;
  for (int n = warp; n < p.n_seqs; n += blockDim.x >> 5) {
    const float s = warp_sum(vals[n * vals_stride + lane] + vals[n * vals_stride + 32 + lane]);
    if (lane == 0) p.out.ss[static_cast<int64_t>(n) * p.out.ss_stride + group] = s;
  }
}

// A 64-row unit holds gate and up of the 32 FFN features from row0 / 2 on
// (gate_up_column, weight_repack.h).
__device__ inline void epilogue_swiglu(const GemvParams& p, const BlockRows& br, const float* vals, int vals_stride) {
  for (int e = threadIdx.x; e < p.n_seqs * 32; e += blockDim.x) {
    const int n = e >> 5, f = br.row0 / 2 + (e & 31);
    if (f >= p.out.n_ff) continue;
    const int gate_row = static_cast<int>(gate_up_column(f)) - br.row0;
    const float gate = vals[n * vals_stride + gate_row];
    const float up = vals[n * vals_stride + gate_row + 16];
    p.out.out_h[static_cast<int64_t>(n) * p.out.out_h_stride + f] = __float2half_rn(gate / (1.0f + expf(-gate)) * up);
  }
}

// Logits out for a 64-row unit, and per sequence its best (value, lowest row) for the greedy
// sampler in argmax entry row0 / 64 (one matrix: launch_gemv checks).
__device__ inline void epilogue_logits(const GemvParams& p, const BlockRows& br, const float* vals, int vals_stride) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int e = threadIdx.x; e < p.n_seqs * kGemvRowsPerBlock; e += blockDim.x) {
    const int n = e / kGemvRowsPerBlock, r = e % kGemvRowsPerBlock, row = br.row0 + r;
    if (row < br.n_rows) p.out.out[static_cast<int64_t>(n) * p.out.out_stride + row] = vals[n * vals_stride + r];
  }
  for (int n = warp; n < p.n_seqs; n += blockDim.x >> 5) {
    float bv = -FLT_MAX;
    int bi = INT_MAX;
    for (int r = lane; r < kGemvRowsPerBlock; r += 32) {
      const int row = br.row0 + r;
      const float v = vals[n * vals_stride + r];
      if (row < br.n_rows && (bi == INT_MAX || v > bv)) { bv = v; bi = row; }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
    }
    if (lane == 0) {
      const int unit = br.row0 / kGemvRowsPerBlock;
      p.out.argmax_val[unit * kGemvMaxSeqs + n] = bv;
      p.out.argmax_idx[unit * kGemvMaxSeqs + n] = bi;
    }
  }
}

// The splits' partials of one element added in split order from zero: every route (counters,
// cluster, shared finish) adds this way, so they give the same bits.
template <int kMax>
__device__ __forceinline__ float sum_in_split_order(const float (&part)[kMax], int n_splits) {
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kMax; ++k) {
    if (k < n_splits) s += part[k];
  }
  return s;
}

// Sum of the block's split partials in split order into vals [n_seqs][kRows]; false when another
// block of this row block is still running (that block, the last to finish, does the rest).
// A thread loads all splits of 4 elements before adding any: one memory latency per round.
inline constexpr int kGemvMaxSplits = 16;
template <int kRows>
__device__ inline bool gather_splits(const GemvParams& p, const BlockRows& br, float* vals, int& last_s) {
  __threadfence();  // this block's partials before its arrival
  __syncthreads();
  if (threadIdx.x == 0) last_s = atomicAdd(&p.split.counters[blockIdx.x], 1) == p.split.n_splits - 1;
  __syncthreads();
  if (!last_s) return false;
  __threadfence();
  constexpr int kBatch = 4;
  const int total = p.n_seqs * kRows;
  for (int e0 = threadIdx.x; e0 < total; e0 += kBatch * blockDim.x) {
    float part[kBatch][kGemvMaxSplits];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int e = e0 + j * blockDim.x;
      const int n = e / kRows, r = e % kRows;
      const bool valid = e < total && br.row0 + r < br.n_rows;
      const float* src = p.split.partials + static_cast<int64_t>(n) * p.split.part_stride + br.col_begin + br.row0 + r;
#pragma unroll
      for (int k = 0; k < kGemvMaxSplits; ++k) {
        part[j][k] = valid && k < p.split.n_splits ? __ldcg(src + k * p.split.split_stride) : 0.0f;
      }
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int e = e0 + j * blockDim.x;
      const float s = sum_in_split_order(part[j], p.split.n_splits);
      if (e < total) vals[e] = s;
    }
  }
  if (threadIdx.x == 0) p.split.counters[blockIdx.x] = 0;  // ready for the next launch
  return true;
}

// Each block of the cluster leaves its accumulators in its own vals ([n_seqs][kRows]) and
// waits at the cluster barrier until every split's are in place.
template <int kNT, int kRows>
__device__ inline void share_cluster_accs(const GemvParams& p, const BlockRows& br, const float (&acc)[kNT][4],
                                          float* vals) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for_each_acc<kNT>(br, p.n_seqs, warp, lane, acc, [&](int n, int r, float v) { vals[n * kRows + r] = v; });
  cooperative_groups::this_cluster().sync();
}

// Then src[k] = split k's vals (entries past n_splits alias split 0's).
__device__ __forceinline__ void map_split_vals(int n_splits, float* vals, const float* (&src)[kGemvMaxClusterSplits]) {
#pragma unroll
  for (int k = 0; k < kGemvMaxClusterSplits; ++k) {
    src[k] = cooperative_groups::this_cluster().map_shared_rank(vals, k < n_splits ? k : 0);
  }
}

// The same sums inside a thread-block cluster of the row block's n_splits blocks: each block
// leaves its accumulators in its own shared memory, the rank-0 block (split 0) adds all of them
// in split order through distributed shared memory. True in that block, which goes on.
template <int kNT, int kRows>
__device__ inline bool cluster_splits(const GemvParams& p, const BlockRows& br, const float (&acc)[kNT][4],
                                      float* vals) {
  share_cluster_accs<kNT, kRows>(p, br, acc, vals);
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const bool lead = cluster.block_rank() == 0;
  if (lead) {
    const float* src[kGemvMaxClusterSplits];
    map_split_vals(p.split.n_splits, vals, src);
    for (int e = threadIdx.x; e < p.n_seqs * kRows; e += blockDim.x) {
      float part[kGemvMaxClusterSplits];
#pragma unroll
      for (int k = 0; k < kGemvMaxClusterSplits; ++k) part[k] = k < p.split.n_splits ? src[k][e] : 0.0f;
      vals[e] = sum_in_split_order(part, p.split.n_splits);  // only this thread reads element e, of every block
    }
  }
  cluster.sync();  // the other blocks' shared memory lives until the lead has read it
  return lead;
}

// The same sums by pushes (kGemvEarlyPush; launch_gemv sets push_smem_offset for one column
// group): the blocks of splits 1.. write their accumulators into split 0's receive area
// ([barrier, 16 bytes][split - 1][n_seqs][kRows] floats) through distributed shared memory,
// each warp arrives on split 0's barrier, and they are done; split 0 waits for every warp of
// them and adds the splits in split order into vals, the arithmetic of cluster_splits. True
// in split 0. The kernel's start armed the receive barrier and arrived on the cluster barrier
// (gemv_block), so the wait here only confirms the barrier is initialized.
template <int kNT, int kRows>
__device__ inline bool push_splits(const GemvParams& p, const BlockRows& br, const float (&acc)[kNT][4], float* vals,
                                   uint8_t* smem) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem + p.push_smem_offset);
  float* recv = reinterpret_cast<float*>(smem + p.push_smem_offset + 16);
  const int split = static_cast<int>(blockIdx.y);  // the cluster is (1, n_splits, 1): rank = split
  const int area = p.n_seqs * kRows;
  cluster_wait_acquire();
  if (split > 0) {
    const uint32_t dst = cluster_map(recv + (split - 1) * area, 0);
    for_each_acc<kNT>(br, p.n_seqs, warp, lane, acc,
                      [&](int n, int r, float v) { st_cluster_f32(dst + 4u * static_cast<uint32_t>(n * kRows + r), v); });
    __syncwarp();
    if (lane == 0) remote_arrive_release(cluster_map(bar, 0));
    return false;
  }
  for_each_acc<kNT>(br, p.n_seqs, warp, lane, acc, [&](int n, int r, float v) { vals[n * kRows + r] = v; });
  __syncthreads();  // thread e adds element e, which another thread wrote
  mbar_wait<true>(bar, 0);  // cluster-scope acquire: the pushed sums
  for (int e = threadIdx.x; e < area; e += blockDim.x) {
    float s = 0.0f;  // from zero, as cluster_splits adds (a -0 split 0 sums alike)
    s += vals[e];
    for (int k = 1; k < p.split.n_splits; ++k) s += recv[(k - 1) * area + e];
    vals[e] = s;
  }
  return true;
}

// The cluster's sums finished by all of its blocks (kGemvSharedFinish; the Sum and Residual
// outputs): after the cluster barrier every block, not only split 0, adds the splits of a
// share of the (64-row unit, sequence) items from the blocks' shared memory and writes their
// outputs, a warp per item. Split 0 alone took one remote round trip per 256 elements (16 at
// 32 rows) and then the residual's global round trips, ~10 us a launch at 32 rows (perf-notes,
// "Where the 8B step at N = 32 goes"); here a warp issues all of its items' remote loads and
// residual loads at once. Same arithmetic as cluster_splits + epilogue_residual (splits added
// from zero in split order, the residual's fixed tree of squares), so the same bits.
template <int kNT, int kRows>
__device__ inline void cluster_finish(const GemvParams& p, const BlockRows& br, const float (&acc)[kNT][4],
                                      float* vals) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n_warps = blockDim.x >> 5;
  share_cluster_accs<kNT, kRows>(p, br, acc, vals);
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int n_splits = p.split.n_splits, rank = static_cast<int>(cluster.block_rank());
  const float* src[kGemvMaxClusterSplits];
  map_split_vals(n_splits, vals, src);
  const bool residual = p.out.kind == GemvOut::Residual;
  constexpr int kUnits = kRows / kGemvRowsPerBlock, kBatch = 2;  // items a warp loads at once
  const int n_items = kUnits * p.n_seqs;
  // The block's items are rank, rank + n_splits, ...; its j-th goes to warp j % n_warps.
  for (int j0 = warp; rank + j0 * n_splits < n_items; j0 += kBatch * n_warps) {
    float part[kBatch][2][kGemvMaxClusterSplits], old[kBatch][2];
    int n_of[kBatch], u_of[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int item = rank + (j0 + b * n_warps) * n_splits;
      // A unit wholly past the matrix's rows has no outputs (nor sums of squares).
      const bool ok = item < n_items && br.row0 + item / p.n_seqs * kGemvRowsPerBlock < br.n_rows;
      u_of[b] = ok ? item / p.n_seqs : kUnits;  // kUnits: no item
      n_of[b] = ok ? item % p.n_seqs : 0;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = u_of[b] * kGemvRowsPerBlock + 32 * h + lane, row = br.row0 + r;
        const bool valid = ok && row < br.n_rows;
        const int e = n_of[b] * kRows + r;
#pragma unroll
        for (int k = 0; k < kGemvMaxClusterSplits; ++k) part[b][h][k] = valid && k < n_splits ? src[k][e] : 0.0f;
        const int64_t at = static_cast<int64_t>(n_of[b]) * p.out.out_stride + br.col_begin + row;
        old[b][h] = valid && residual ? p.out.out[at] : 0.0f;
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (u_of[b] == kUnits) continue;  // warp-uniform
      const int n = n_of[b];
      float sq[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = br.row0 + u_of[b] * kGemvRowsPerBlock + 32 * h + lane;
        const float s = sum_in_split_order(part[b][h], n_splits);
        sq[h] = 0.0f;
        if (row >= br.n_rows) continue;
        float* dst = p.out.out + static_cast<int64_t>(n) * p.out.out_stride + br.col_begin + row;
        if (residual) {
          const float v = old[b][h] + s;
          *dst = v;
          sq[h] = v * v;
          store_xw(p, n, br.col_begin + row, v);
        } else {
          *dst = s + (br.bias ? br.bias[row] : 0.0f);
        }
      }
      if (residual) {
        const float ss = warp_sum(sq[0] + sq[1]);
        const int group = (br.col_begin + br.row0 + u_of[b] * kGemvRowsPerBlock) / kNormGroup;
        if (lane == 0) p.out.ss[static_cast<int64_t>(n) * p.out.ss_stride + group] = ss;
      }
    }
  }
  trace_phase(p.trace, 3);
  cluster.sync();  // the other blocks' shared memory lives until every block has read it
}

// kRows: the block's rows (warps x 16), one or two 64-row units.
// old_s: the residual rows prefetched by this block (kGemvEarlyResidual), or null.
// smem: the launch's dynamic shared memory (the push route's receive area).
template <int kNT, int kRows>
__device__ inline void gemv_epilogue(const GemvParams& p, const BlockRows& br, const float (&acc)[kNT][4],
                                     float* vals, int& last_s, const float* old_s, uint8_t* smem) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const bool clustered = p.split.reduce == GemvReduce::Cluster;
  if (p.out.kind == GemvOut::Partials || (p.split.n_splits > 1 && !clustered)) {
    float* part = p.split.partials + blockIdx.y * p.split.split_stride + br.col_begin + br.row0;
    for_each_acc<kNT>(br, p.n_seqs, warp, lane, acc,
                      [&](int n, int r, float v) { part[static_cast<int64_t>(n) * p.split.part_stride + r] = v; });
    if (p.out.kind == GemvOut::Partials) return;
  }
  if (old_s) cp_async_wait_all();  // this thread's residual copies (made visible by the barrier)
  __syncthreads();  // the x staging area becomes vals
  if (clustered && (p.early_loads & kGemvSharedFinish) != 0 &&
      (p.out.kind == GemvOut::Sum || p.out.kind == GemvOut::Residual) && (kNT > 1 || p.push_smem_offset == 0)) {
    cluster_finish<kNT, kRows>(p, br, acc, vals);
    return;
  }
  if (clustered) {
    bool lead;
    if constexpr (kNT == 1) {  // the push route (one column group only: kept out of the wider kernels)
      lead = p.push_smem_offset > 0 ? push_splits<kNT, kRows>(p, br, acc, vals, smem)
                                    : cluster_splits<kNT, kRows>(p, br, acc, vals);
    } else {
      lead = cluster_splits<kNT, kRows>(p, br, acc, vals);
    }
    if (!lead) return;
    trace_phase(p.trace, 3);
  } else if (p.split.n_splits > 1) {
    if (!gather_splits<kRows>(p, br, vals, last_s)) return;
    trace_phase(p.trace, 3);
  } else {
    for_each_acc<kNT>(br, p.n_seqs, warp, lane, acc, [&](int n, int r, float v) { vals[n * kRows + r] = v; });
  }
  __syncthreads();
  if (p.out.kind == GemvOut::Sum) {
    for (int e = threadIdx.x; e < p.n_seqs * kRows; e += blockDim.x) {
      const int n = e / kRows, row = br.row0 + e % kRows;
      if (row >= br.n_rows) continue;
      const float b = br.bias ? br.bias[row] : 0.0f;
      p.out.out[static_cast<int64_t>(n) * p.out.out_stride + br.col_begin + row] = vals[e] + b;
    }
    return;
  }
  // The fused outputs work on 64-row units (a block-uniform loop: the residual's has barriers).
#pragma unroll 1
  for (int u = 0; u < kRows / kGemvRowsPerBlock; ++u) {
    BlockRows unit = br;
    unit.row0 = br.row0 + u * kGemvRowsPerBlock;
    if (unit.row0 >= br.n_rows) break;
    float* uv = vals + u * kGemvRowsPerBlock;
    switch (p.out.kind) {
      case GemvOut::Residual: epilogue_residual(p, unit, uv, kRows, old_s); break;
      case GemvOut::SwiGlu: epilogue_swiglu(p, unit, uv, kRows); break;
      case GemvOut::Logits: epilogue_logits(p, unit, uv, kRows); break;
      default: break;
    }
  }
}

}  // namespace chorus::cuda
