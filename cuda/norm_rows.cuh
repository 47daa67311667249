#pragma once
// RMSNorm of one residual row from the per-64-column sums of squares its producer left
// (gemv.h), as two device functions shared by the GEMV's fused normalized input and the
// standalone pass (layer_ops.h, launch_norm_rows). Both routes must round to the very same
// f16 values, or a sequence's tokens would depend on how many sequences share its step.
#include <cuda_fp16.h>

#include <cstring>

#include "cuda/gemv.h"
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

// Residual row n's columns [k, k + 8) and their norm weights from a NormF32 input (zeros past
// n_cols). Split from the conversion so a caller can issue these loads before 1 / rms is known.
__device__ __forceinline__ void load_norm8(const GemvInput& in, int n, int k, int n_cols, float (&x)[8], float (&w)[8]) {
  const float* src = in.resid + static_cast<int64_t>(n) * in.resid_stride + k;
  if (k + 8 <= n_cols && in.resid_stride % 4 == 0) {
    const float4 a = *reinterpret_cast<const float4*>(src), b = *reinterpret_cast<const float4*>(src + 4);
    const float4 wa = *reinterpret_cast<const float4*>(in.norm_w + k);
    const float4 wb = *reinterpret_cast<const float4*>(in.norm_w + k + 4);
    x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w; x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
    w[0] = wa.x; w[1] = wa.y; w[2] = wa.z; w[3] = wa.w; w[4] = wb.x; w[5] = wb.y; w[6] = wb.z; w[7] = wb.w;
    return;
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    x[j] = k + j < n_cols ? src[j] : 0.0f;
    w[j] = k + j < n_cols ? in.norm_w[k + j] : 0.0f;
  }
}

// The 8 normalized f16 values (a zero column stays +0: rstd is finite, eps > 0).
__device__ __forceinline__ uint4 norm8_to_half(const float (&x)[8], const float (&w)[8], float rstd) {
  __half h[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) h[j] = norm_to_half(x[j], rstd, w[j]);
  uint4 u;
  memcpy(&u, h, sizeof(u));
  return u;
}

}  // namespace chorus::cuda
