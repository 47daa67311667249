#pragma once
// Whole-matrix f16 dequantization (prefill's GEMM input) and embedding-row lookup over the
// repacked layout (weight_repack.h). Included by gemv_kernel.cuh only.
#include <cuda_fp16.h>

#include "cuda/gemv.h"
#include "cuda/quant_tile.cuh"
#include "cuda/weight_repack.h"

namespace chorus::cuda {

// Thread idx dequantizes part (idx & 3) of record (row, tile) = (idx >> 2) / n_tiles, % n_tiles,
// i.e. the 64 halves at out[idx * 64] of the row-major result: consecutive threads own
// consecutive 128-byte pieces. Each warp first puts its 32 pieces in shared memory (pitch
// 144 B: conflict-free 16-byte accesses) and then writes the warp's 4 KB with consecutive
// lanes on consecutive 16 bytes, so every store instruction covers 512 contiguous bytes.
inline constexpr int kDequantThreads = 256;
inline constexpr int kDequantPitch = 144;

template <TensorType kType>
__global__ void __launch_bounds__(kDequantThreads) dequant_f16_kernel(const uint8_t* w, int64_t n_rows,
                                                                      int32_t n_tiles, int32_t record_bytes,
                                                                      __half* out) {
  __shared__ __align__(16) uint8_t stage[kDequantThreads / 32][32 * kDequantPitch];
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // (row, tile, part)
  const int64_t total = n_rows * n_tiles * 4;
  const int lane = threadIdx.x & 31;
  uint8_t* mine = stage[threadIdx.x >> 5];
  if (idx < total) {
    const int t = static_cast<int>(idx & 3);
    const int64_t rec = idx >> 2, row = rec / n_tiles, tile = rec - row * n_tiles;
    __half2 v[32];
    TileDequant<kType>::run(w + record_offset(row, tile, n_tiles, record_bytes), t, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      *reinterpret_cast<uint4*>(mine + lane * kDequantPitch + 16 * j) =
          make_uint4(h2_as_u32(v[4 * j]), h2_as_u32(v[4 * j + 1]), h2_as_u32(v[4 * j + 2]), h2_as_u32(v[4 * j + 3]));
    }
  }
  __syncwarp();
  const int64_t warp_first = idx - lane;  // first piece of this warp
  uint4* dst = reinterpret_cast<uint4*>(out + warp_first * 64);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int c = 32 * i + lane;  // 16-byte chunk of the warp's 4 KB
    const int src_lane = c >> 3;
    if (warp_first + src_lane < total) {
      dst[c] = *reinterpret_cast<const uint4*>(mine + src_lane * kDequantPitch + 16 * (c & 7));
    }
  }
}

// One block per token; a thread per 64-column part, which is also one sum-of-squares group.
template <TensorType kType>
__global__ void embed_kernel(const EmbedParams p) {
  const int i = blockIdx.x;
  const int64_t row = p.tokens[i];
  float* dst = p.out + static_cast<int64_t>(i) * p.out_stride;
  for (int part = threadIdx.x; part < p.n_tiles * 4; part += blockDim.x) {
    const int tile = part >> 2, t = part & 3;
    __half2 v[32];
    TileDequant<kType>::run(p.table + record_offset(row, tile, p.n_tiles, p.record_bytes), t, v);
    float sq = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int c = tile * kTileElems + 64 * t + 2 * j;
      const float2 f = __half22float2(v[j]);
      if (c < p.n_cols) { dst[c] = f.x; sq += f.x * f.x; }
      if (c + 1 < p.n_cols) { dst[c + 1] = f.y; sq += f.y * f.y; }
      if (p.xw_h != nullptr) {
        __half* xw = p.xw_h + static_cast<int64_t>(i) * p.xw_h_stride;
        if (c < p.n_cols) xw[c] = __float2half_rn(f.x * p.norm_w[c]);
        if (c + 1 < p.n_cols) xw[c + 1] = __float2half_rn(f.y * p.norm_w[c + 1]);
      }
    }
    if (p.ss != nullptr && 64 * part < p.n_cols) p.ss[static_cast<int64_t>(i) * p.ss_stride + part] = sq;
  }
}

}  // namespace chorus::cuda
