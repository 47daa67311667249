#pragma once
// The row route of decode attention (attention_row.cu): one block per (row, kv head) holding
// all of the row's K/V rows, for launches whose rows fit kAttnMaxClusterChunks chunks.
#include <cuda_runtime.h>

#include "cuda/attention.h"

namespace chorus::cuda {

// Warps of a row block at most (kernel launch bounds: 80 registers a thread).
inline constexpr int kAttnRowMaxWarps = 24;
// Warps of a row block where the launch runs every block at once (attention_row.cu's
// auto_row_warps): one per item of a split row's block (4 heads x 4 chunks for the 8B and 1B).
inline constexpr int kAttnRowResidentWarps = 16;

// Launches d as row blocks and returns true, or returns false (launching nothing) where the
// route does not apply: more rows than d.row_max_rows, rows longer than kAttnMaxClusterChunks
// chunks, or staged rows past one block's shared memory.
bool launch_attention_row(const DecodeAttentionParams& d, cudaStream_t stream);

// Raises the row kernels' shared-memory limit to the device's. Once per process, before any
// graph capture (prepare_attention_kernels calls it).
void prepare_attention_row_kernels();

}  // namespace chorus::cuda
