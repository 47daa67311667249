#pragma once
// RMSNorm of one residual row from the per-64-column sums of squares its producer left
// (gemv.h), as two device functions shared by the GEMV's fused normalized input and the
// standalone pass (layer_ops.h, launch_norm_rows). Both routes must round to the very same
// f16 values, or a sequence's tokens would depend on how many sequences share its step.
#include <cuda_fp16.h>

#include "cuda/warp_reduce.cuh"

namespace chorus::cuda {

// 1 / rms of a row of n_cols columns, whose sums of squares per 64 columns are ss[0..):
// lanes add groups lane, lane + 32, ... in order, then a fixed butterfly. Every lane of the
// warp calls it and gets the result.
__device__ __forceinline__ float row_rstd_from_ss(const float* ss, int n_cols, float eps, int lane) {
  const int n_groups = (n_cols + 63) / 64;
  float s = 0.0f;
  for (int g = lane; g < n_groups; g += 32) s += ss[g];
  s = warp_sum(s);
  return rsqrtf(s / static_cast<float>(n_cols) + eps);
}

// One normalized element, rounded to f16 as the GEMV consumes it.
__device__ __forceinline__ __half norm_to_half(float x, float rstd, float w) { return __float2half_rn(x * rstd * w); }

}  // namespace chorus::cuda
