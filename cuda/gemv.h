#pragma once
// Batched quantized GEMV for a decode step (and small prefill chunks): out = W x for M <= 32
// activation rows at once. Each weight tile is read from memory once per step and dequantized
// in registers, then fed to mma.sync (m16n8k16, f16 in, f32 accumulate) against all M rows.
//
// Reduction order, fixed for every M (batch invariance): K is cut into `n_splits` contiguous
// ranges of tiles chosen from the matrix shape only; within a range tiles go in order, and
// within a tile the 16 k-steps go in order. Each split writes its own f32 partial; consumers
// add the partials in split order. A row's result therefore never depends on M or on the
// other rows of the batch.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/quant/tensor_type.h"

namespace chorus::cuda {

inline constexpr int kGemvMaxSeqs = 32;
inline constexpr int kGemvMaxMats = 3;
inline constexpr int kGemvRowsPerBlock = 64;  // 4 warps x 16 rows

struct GemvParams {
  // Up to three matrices of the same type and K, launched together; their outputs are laid
  // side by side: matrix i writes columns [col_begin[i], col_begin[i] + n_rows[i]).
  const uint8_t* w[kGemvMaxMats] = {};  // repacked tiles, [n_rows][n_tiles][record_bytes]
  int32_t n_rows[kGemvMaxMats] = {};
  int32_t col_begin[kGemvMaxMats] = {};
  int32_t n_mats = 0;
  int32_t n_tiles = 0;        // ceil(K / 256)
  int32_t record_bytes = 0;
  int32_t k_elems = 0;        // K
  const __half* x = nullptr;  // [n_seqs][x_stride], f16 activations
  int32_t x_stride = 0;
  int32_t n_seqs = 0;         // M, 1..32
  float* out = nullptr;       // [n_splits][n_seqs][out_stride] f32 partials
  int32_t out_stride = 0;
  int64_t split_stride = 0;   // elements between two splits' partials
  int32_t n_splits = 1;
  int32_t tiles_per_split = 0;
};

// Split count for a matrix group: depends on the shape and the device only, never on M.
int32_t gemv_choose_splits(int64_t total_rows, int32_t n_tiles, int32_t n_sms);

// Raises the dynamic shared-memory limit of every GEMV instantiation (the pipelines take up
// to ~150 KB). Call once per process before the first launch (not inside graph capture).
void prepare_gemv_kernels();

// Launches the kernel for `type`. Throws CudaError on a launch failure.
void launch_gemv(TensorType type, const GemvParams& p, cudaStream_t stream);

// Dequantizes a whole repacked matrix into f16, row-major [n_rows][n_tiles * 256]
// (prefill's tensor-core GEMM reads it).
void launch_dequant_f16(TensorType type, const uint8_t* w, int64_t n_rows, int32_t n_tiles,
                        int32_t record_bytes, __half* out, cudaStream_t stream);

// Embedding lookup: out[i][0..n_cols) = row tokens[i] of the repacked table, as f32.
void launch_embed_rows(TensorType type, const uint8_t* table, int32_t n_tiles, int32_t record_bytes,
                       int32_t n_cols, const int32_t* tokens, int32_t n_tokens, float* out,
                       int32_t out_stride, cudaStream_t stream);

namespace detail {
template <TensorType kType>
void prepare_gemv_typed();
template <TensorType kType>
void launch_gemv_typed(const GemvParams& p, cudaStream_t stream);
template <TensorType kType>
void launch_dequant_typed(const uint8_t* w, int64_t n_rows, int32_t n_tiles, int32_t record_bytes, __half* out,
                          cudaStream_t stream);
template <TensorType kType>
void launch_embed_typed(const uint8_t* table, int32_t n_tiles, int32_t record_bytes, int32_t n_cols,
                        const int32_t* tokens, int32_t n_tokens, float* out, int32_t out_stride,
                        cudaStream_t stream);
}  // namespace detail

}  // namespace chorus::cuda
