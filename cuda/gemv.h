#pragma once
// Batched quantized GEMV for a decode step (and small prefill chunks): out = W x for M <= 32
// activation rows at once. Each weight tile is read from memory once per step (one bulk copy
// per warp and tile into shared memory), dequantized in registers and fed to mma.sync
// (m16n8k16, f16 in, f32 accumulate) against all M rows.
//
// The kernel also does the work around the product that would otherwise cost launches:
//   input : f16 rows as they are, or RMSNorm of the f32 residual rows (the row's scale from
//           per-64-column sums of squares that the producer left, times the norm weights);
//   output: raw split partials; or, in one block per 64-row block (split 0 of a thread-block
//           cluster, or the last to finish, GemvReduce), the splits' sums added in split
//           order and then written (+ bias), added to the residual (with new sums of
//           squares), turned into SwiGLU of an interleaved gate/up pair, or written as
//           logits with a per-block argmax.
//
// Reduction order, fixed for every M (batch invariance): K is cut into `n_splits` contiguous
// ranges of tiles chosen from the matrix shape only; within a range tiles go in order, within a
// tile the 16 k-steps go in order; split partials are added in split order; sums of squares
// are per 64 columns in a fixed tree and added in column order. A row's result therefore never
// depends on M or on the other rows of the batch.
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/trace_span.h"
#include "engine/quant/tensor_type.h"

namespace chorus::cuda {

inline constexpr int kGemvMaxSeqs = 32;
inline constexpr int kGemvMaxMats = 3;
inline constexpr int kGemvWarps = 4;
// Output unit of the fused epilogues: SwiGLU pairs, sums of squares and the logits' argmax
// are per 64 rows. A block computes one (4 warps x 16 rows) or two such units (8 warps, for
// more than 8 activation rows and records up to 256 bytes: GemvShape).
inline constexpr int kGemvRowsPerBlock = 64;
inline constexpr int kNormGroup = 64;         // columns per sum-of-squares partial
// Activations staged in shared memory per launch: one tile of one row takes 512 bytes (256
// halves, swizzled rather than padded: gemv_kernel.cuh); past 8 rows the rows are rounded up
// to whole mma column groups of 8 (the extra rows are zeros), and where the copy engine stages
// them a tile's rows start at a 1024-byte boundary (the swizzle's period; elsewhere 1024 bytes
// a tile at M = 1 would cost a 4th block per multiprocessor for the Q6_K LM head). A launch
// stages as many tiles as fit its budget (half of it per buffer when double-buffered,
// gemv_x_async). Up to 8 rows the launch then takes fewer tiles a chunk where that fits another
// block on a multiprocessor (gemv_fit_chunk): at M = 8 a 4-tile chunk held a Q6_K block's
// shared memory at 77 KB, 2 blocks per multiprocessor (Q4_K: 70 KB, 3), and with 2-tile chunks
// (3 and 4 blocks) the 8B step at N = 8 took 3.29 ms instead of 3.58 (perf-notes v12). Past 8
// rows a chunk is a tile or two either way.
inline constexpr int kGemvXTileBytes = 512;
inline constexpr int kGemvXBudgetBytes = 32 * 1024;  // M = 32: two 1-tile buffers
// More than 8 rows by the copy engine: a ring of one-tile buffers (gemv_kernel.cuh) in this
// budget, 2..kGemvMaxRingBufs of them (M = 32: 2, M = 16: 4). 48 KB (3 buffers at M = 32)
// measured no faster per step and takes 16 KB more of a multiprocessor's shared memory per
// block (perf-notes v10).
inline constexpr int kGemvXRingBytes = 32 * 1024;
inline constexpr int kGemvMaxRingBufs = 6;
inline constexpr int kGemvRingMinTiles = 4;  // splits shorter than this keep the chunk loop (gemv.cu)
__host__ __device__ constexpr int gemv_x_rows(int n_seqs) { return n_seqs <= 8 ? n_seqs : (n_seqs + 7) / 8 * 8; }
__host__ __device__ constexpr int gemv_x_tile_stride(int n_seqs, bool tma) {
  const int bytes = gemv_x_rows(n_seqs) * kGemvXTileBytes;
  return tma ? (bytes + 1023) / 1024 * 1024 : bytes;
}

enum class GemvIn : int32_t {
  Half,     // x: f16 rows
  NormF32,  // RMSNorm(residual rows) * norm weights, rounded to f16
  // x: f16(residual * norm weights) rows as the residual's producer wrote them
  // (GemvOutput::xw_h), staged like Half; each output is then scaled by its row's 1 / rms from
  // the sums of squares (ss), after the product. RMSNorm is linear in the row's scale, so this
  // is the normalized product without a whole-row dependency between the producer's last
  // column and the first f16 value: no pass launch, no normalization in every block.
  HalfRowScaled,
};

enum class GemvOut : int32_t {
  Partials,  // f32 partial per split: [n_splits][n_seqs][part_stride]
  Sum,       // out[seq][col] = sum of splits (+ bias)
  Residual,  // residual[seq][col] += sum of splits; sums of squares per 64 columns
  SwiGlu,    // interleaved gate/up rows -> out_h[seq][i] = f16(silu(gate_i) * up_i)
  Logits,    // out[seq][col] = sum (one split); per-block argmax (value, lowest index)
};

struct GemvMats {
  // Up to three matrices of the same type and K, launched together; matrix i writes columns
  // [col_begin[i], col_begin[i] + n_rows[i]).
  const uint8_t* w[kGemvMaxMats] = {};  // repacked [groups][n_tiles][16][record_bytes]
  int32_t n_rows[kGemvMaxMats] = {};
  int32_t col_begin[kGemvMaxMats] = {};
  const float* bias[kGemvMaxMats] = {};  // Sum: [n_rows[i]] or null
  int32_t n_mats = 0;
  int32_t n_tiles = 0;  // ceil(K / 256)
  int32_t record_bytes = 0;
  // launch_gemv_pair: matrices [0, n_mats_a) are of the first type, the rest of the second,
  // whose records are record_bytes_b.
  int32_t n_mats_a = 0;
  int32_t record_bytes_b = 0;
  int32_t k_elems = 0;  // K
};

// Entry i of one of GemvMats' per-matrix arrays. Explicit selects: a kernel indexing a
// parameter array with a run-time index would copy the array into local memory.
template <typename T>
__host__ __device__ __forceinline__ T gemv_mat_entry(const T (&entries)[kGemvMaxMats], int i) {
  static_assert(kGemvMaxMats == 3, "one select per matrix");
  return i == 0 ? entries[0] : (i == 1 ? entries[1] : entries[2]);
}

struct GemvInput {
  GemvIn kind = GemvIn::Half;
  const __half* x = nullptr;  // Half, HalfRowScaled: [n_seqs][x_stride]
  int32_t x_stride = 0;
  const float* resid = nullptr;  // NormF32: [n_seqs][resid_stride], K columns
  int32_t resid_stride = 0;
  const float* ss = nullptr;  // NormF32, HalfRowScaled: [n_seqs][ss_stride] sums of squares per 64 columns
  int32_t ss_stride = 0;
  const float* norm_w = nullptr;  // NormF32: [K]
  float eps = 1e-5f;  // NormF32, HalfRowScaled
};

// How the split partials of one 64-row block come together (outputs other than Partials).
enum class GemvReduce : int32_t {
  Auto,      // Cluster when 2..kGemvMaxClusterSplits splits, else Counters (launch_gemv decides)
  Cluster,   // the splits' blocks form a thread-block cluster; the first adds the others'
             // accumulators from their shared memory (no global round trips, no counters)
  Counters,  // partials through global memory; the last block to arrive (atomic counter) adds them
};
inline constexpr int kGemvMaxClusterSplits = 8;  // the portable cluster size

struct GemvSplit {
  int32_t n_splits = 1;
  int32_t tiles_per_split = 0;
  GemvReduce reduce = GemvReduce::Auto;  // both routes add the splits in split order: same bits
  float* partials = nullptr;  // [n_splits][n_seqs][part_stride] (Partials, or Counters with n_splits > 1)
  int64_t split_stride = 0;   // elements between two splits' partials
  int32_t part_stride = 0;    // elements between two rows' partials
  int32_t* counters = nullptr;  // Counters: one per block column (gridDim.x <= gemv_row_blocks), zero between launches
};

struct GemvOutput {
  GemvOut kind = GemvOut::Partials;
  float* out = nullptr;  // Sum, Logits: [n_seqs][out_stride]; Residual: the residual rows
  int32_t out_stride = 0;
  float* ss = nullptr;  // Residual: [n_seqs][ss_stride]
  int32_t ss_stride = 0;
  // Residual, optional: the next RMSNorm's input for GemvIn::HalfRowScaled,
  // xw_h[seq][col] = f16(new residual * xw_norm_w[col]).
  __half* xw_h = nullptr;
  int32_t xw_h_stride = 0;
  const float* xw_norm_w = nullptr;
  __half* out_h = nullptr;  // SwiGlu: [n_seqs][out_h_stride]
  int32_t out_h_stride = 0;
  int32_t n_ff = 0;             // SwiGlu: outputs per row
  float* argmax_val = nullptr;  // Logits: [64-row units][kGemvMaxSeqs]
  int32_t* argmax_idx = nullptr;
};

// Round trips taken off the critical path of a launch, where a launch is a chain of latencies
// rather than a stream of bytes (perf-notes v10-v14): the first two in launches of at most 8
// rows (one column group), the third at any row count.
enum GemvEarly : int32_t {
  // Residual output: the block that will add the splits (split 0 of a cluster, or the only
  // split) copies its residual rows into shared memory right after pdl_wait, beside the first
  // activation chunk, instead of loading them after the reduction.
  kGemvEarlyResidual = 1,
  // Splits added in a cluster: every other split's block writes its accumulators into the
  // first block's shared memory and arrives on its barrier, then is done; the first block adds
  // them in split order (the same bits as the cluster barrier route, which reads them remotely
  // between two cluster barriers).
  kGemvEarlyPush = 2,
  // Splits added in a cluster (Sum and Residual outputs; at one column group only where the
  // sums are not pushed): every block of the cluster adds and writes a share of the rows
  // instead of the first block all of them (gemv_epilogue.cuh, cluster_finish). The same bits.
  kGemvSharedFinish = 4,
};

struct GemvParams {
  GemvMats mats;
  GemvInput in;
  GemvSplit split;
  GemvOutput out;
  int32_t n_seqs = 0;        // M, 1..32
  int32_t x_chunk_tiles = 0;  // set by launch_gemv: K tiles of x staged in shared memory at once
  int32_t x_tma = 0;          // set by launch_gemv: x_map is valid, the copy engine stages x
  int32_t x_ring_bufs = 0;    // set by launch_gemv: > 0: x in a ring of that many one-tile buffers
  int32_t x_budget_bytes = 0;  // x chunks, both buffers; 0: kGemvXBudgetBytes, fitted (a measurement override)
  // GemvEarly bits: loads moved earlier, sums spread over the cluster; the same bits come out
  // either way.
  int32_t early_loads = 0;
  int32_t resid_smem_offset = 0;  // set by launch_gemv: > 0: the prefetched residual rows (kGemvEarlyResidual)
  int32_t push_smem_offset = 0;   // set by launch_gemv: > 0: barrier + the other splits' sums (kGemvEarlyPush)
  // 1: shared memory padded so that a multiprocessor holds at most ceil(blocks / SMs) of this
  // launch's blocks (CudaTuning::gemv_spread; gemv_launch.cuh). Placement only.
  int32_t spread_blocks = 0;
  CUtensorMap x_map{};        // set by launch_gemv (tensor_map.h), read in place by the kernel
  TraceSpan* trace = nullptr;  // step_trace.h: stamped by every block when set
};

// Whether the kernel stages this input asynchronously into two chunk buffers, by the copy
// engine or cp.async (f16 rows whose 8-element vectors are 16-byte aligned); otherwise through
// registers into one buffer.
__host__ __device__ inline bool gemv_x_half(const GemvInput& in) {
  return in.kind == GemvIn::Half || in.kind == GemvIn::HalfRowScaled;
}
__host__ __device__ inline bool gemv_x_async(const GemvInput& in) { return gemv_x_half(in) && in.x_stride % 8 == 0; }

// Split count for a matrix group: depends on the shape and the device only, never on M.
// Also returns tiles_per_split such that every split has at least one tile.
struct GemvSplitShape {
  int32_t n_splits = 1;
  int32_t tiles_per_split = 0;
};
GemvSplitShape gemv_choose_splits(int64_t total_rows, int32_t n_tiles, int32_t n_sms);
// n_splits (clamped to 1..16 and to n_tiles) as a shape with no empty split.
GemvSplitShape gemv_split_shape(int32_t n_splits, int32_t n_tiles);

// Blocks along x of a launch of `rows_per_block`-row blocks over matrices [first, last) (a
// two-type launch numbers each type's blocks apart), and over every matrix. With the default
// (64-row units) the latter is the most any launch uses: the size of `counters` and of the
// argmax arrays (one argmax entry per 64-row unit).
__host__ __device__ inline int32_t gemv_row_blocks_of(const GemvMats& m, int first, int last, int rows_per_block) {
  int32_t n = 0;
  for (int i = 0; i < kGemvMaxMats; ++i) {
    if (i >= first && i < last) n += (gemv_mat_entry(m.n_rows, i) + rows_per_block - 1) / rows_per_block;
  }
  return n;
}
__host__ __device__ inline int32_t gemv_row_blocks(const GemvMats& m, int32_t rows_per_block = kGemvRowsPerBlock) {
  return gemv_row_blocks_of(m, 0, m.n_mats, rows_per_block);
}

// Raises the dynamic shared-memory limit of every GEMV instantiation. Call once per process
// before the first launch (not inside graph capture).
void prepare_gemv_kernels();

// Launches the kernel for `type`. Throws CudaError on a launch failure or bad parameters.
void launch_gemv(TensorType type, GemvParams p, cudaStream_t stream);

// Matrices of two types in one launch: [0, p.mats.n_mats_a) of type a, the rest of type b (a
// q4_k_m model's q|k are Q4_K and, in some layers, v is Q6_K). Each block computes what it would
// in a launch of its own type, with the launch's split shape, so the bits are those of two
// launches; the step saves one launch's latency chain. Only the pairs gemv_pair_supported names.
bool gemv_pair_supported(TensorType a, TensorType b);
void launch_gemv_pair(TensorType a, TensorType b, GemvParams p, cudaStream_t stream);

// Dequantizes a whole repacked matrix into f16, row-major [n_rows][n_tiles * 256]
// (prefill's tensor-core GEMM reads it).
void launch_dequant_f16(TensorType type, const uint8_t* w, int64_t n_rows, int32_t n_tiles,
                        int32_t record_bytes, __half* out, cudaStream_t stream);

// Embedding lookup: out[i][0..n_cols) = row tokens[i] of the repacked table, as f32, and
// ss[i][g] = sum of squares of columns [64g, 64g+64) (the first layer's RMSNorm input).
struct EmbedParams {
  const uint8_t* table = nullptr;
  int32_t n_tiles = 0, record_bytes = 0, n_cols = 0;
  const int32_t* tokens = nullptr;
  int32_t n_tokens = 0;
  float* out = nullptr;
  int32_t out_stride = 0;
  float* ss = nullptr;
  int32_t ss_stride = 0;
  // Optional: xw_h[i][c] = f16(out[i][c] * norm_w[c]), the first layer's GemvIn::HalfRowScaled input.
  __half* xw_h = nullptr;
  int32_t xw_h_stride = 0;
  const float* norm_w = nullptr;
};
void launch_embed_rows(TensorType type, const EmbedParams& p, cudaStream_t stream);

namespace detail {
template <TensorType kType>
void prepare_gemv_typed();
template <TensorType kType>
void launch_gemv_typed(const GemvParams& p, cudaStream_t stream);
void prepare_gemv_pairs();
void launch_gemv_q4k_q6k(const GemvParams& p, cudaStream_t stream);
template <TensorType kType>
void launch_dequant_typed(const uint8_t* w, int64_t n_rows, int32_t n_tiles, int32_t record_bytes, __half* out,
                          cudaStream_t stream);
template <TensorType kType>
void launch_embed_typed(const EmbedParams& p, cudaStream_t stream);
}  // namespace detail

}  // namespace chorus::cuda
