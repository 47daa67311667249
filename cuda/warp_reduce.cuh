#pragma once
// Warp-wide reductions in a fixed butterfly order, so a sum never depends on timing.
#include <cuda_runtime.h>

namespace chorus::cuda {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace chorus::cuda
