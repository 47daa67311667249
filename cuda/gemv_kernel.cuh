#pragma once
// The batched GEMV kernel template (see gemv.h). Included by one .cu per type family so that
// nvcc's work is spread over several translation units.
#include <cuda_fp16.h>

#include "cuda/cuda_check.h"
#include "cuda/gemv.h"
#include "cuda/quant_tile.cuh"
#include "cuda/weight_repack.h"

namespace chorus::cuda {

// Shared-memory activation tile: row n holds 256 halves in 4 groups of 64, each group padded
// by 4 halves, so a warp's 8-byte B-fragment loads hit 32 distinct banks.
inline constexpr int kXGroupStride = 68;
inline constexpr int kXRowStride = 4 * kXGroupStride;  // 272 halves; 136 words = 8 mod 32

__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Stages x[0..8*kNT)[tile*256 .. +256) into shared memory (zero beyond M and K).
template <int kNT>
__device__ __forceinline__ void stage_x(const GemvParams& p, int tile, __half* buf) {
  constexpr int kChunks = kNT * 8 * 64;  // 4-half chunks
  const int k_base = tile * kTileElems;
  for (int c = threadIdx.x; c < kChunks; c += blockDim.x) {
    const int n = c >> 6, kc = (c & 63) * 4;
    uint2 v = make_uint2(0, 0);
    if (n < p.n_seqs && k_base + kc < p.k_elems) {
      v = *reinterpret_cast<const uint2*>(p.x + static_cast<int64_t>(n) * p.x_stride + k_base + kc);
    }
    *reinterpret_cast<uint2*>(buf + n * kXRowStride + (kc >> 6) * kXGroupStride + (kc & 63)) = v;
  }
}

template <TensorType kType, int kNT>
__global__ void __launch_bounds__(128) gemv_kernel(const GemvParams p) {
  extern __shared__ __align__(16) __half x_smem[];  // [2][kNT*8][kXRowStride]
  constexpr int kBufHalves = kNT * 8 * kXRowStride;

  // Which matrix and which 64-row block of it.
  int rb = blockIdx.x, mat = 0;
  const int blocks0 = (p.n_rows[0] + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock;
  const int blocks1 = (p.n_rows[1] + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock;
  if (p.n_mats > 1 && rb >= blocks0) {
    rb -= blocks0;
    mat = 1;
    if (p.n_mats > 2 && rb >= blocks1) { rb -= blocks1; mat = 2; }
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  // Explicit selects keep the parameter arrays out of local memory.
  const int n_rows = mat == 0 ? p.n_rows[0] : (mat == 1 ? p.n_rows[1] : p.n_rows[2]);
  const uint8_t* w_mat = mat == 0 ? p.w[0] : (mat == 1 ? p.w[1] : p.w[2]);
  const int col_begin = mat == 0 ? p.col_begin[0] : (mat == 1 ? p.col_begin[1] : p.col_begin[2]);
  const int row_base = rb * kGemvRowsPerBlock + warp * 16;
  const bool warp_active = row_base < n_rows;
  const int r0 = min(row_base + g, n_rows - 1), r1 = min(row_base + g + 8, n_rows - 1);
  const int64_t row_bytes = static_cast<int64_t>(p.n_tiles) * p.record_bytes;
  const uint8_t* w0 = w_mat + r0 * row_bytes;
  const uint8_t* w1 = w_mat + r1 * row_bytes;

  const int split = blockIdx.y;
  const int tile_begin = split * p.tiles_per_split;
  const int tile_end = min(p.n_tiles, tile_begin + p.tiles_per_split);

  float acc[kNT][4];
#pragma unroll
  for (int i = 0; i < kNT; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

  if (tile_begin < tile_end) stage_x<kNT>(p, tile_begin, x_smem);
  __syncthreads();
  for (int tile = tile_begin, it = 0; tile < tile_end; ++tile, ++it) {
    if (tile + 1 < tile_end) stage_x<kNT>(p, tile + 1, x_smem + ((it + 1) & 1) * kBufHalves);
    if (warp_active) {
      __half2 wa[32], wb[32];
      TileDequant<kType>::run(w0 + static_cast<int64_t>(tile) * p.record_bytes, t, wa);
      TileDequant<kType>::run(w1 + static_cast<int64_t>(tile) * p.record_bytes, t, wb);
      const __half* buf = x_smem + (it & 1) * kBufHalves + t * kXGroupStride;
#pragma unroll
      for (int s = 0; s < 16; ++s) {
        const uint32_t a[4] = {h2_as_u32(wa[2 * s]), h2_as_u32(wb[2 * s]), h2_as_u32(wa[2 * s + 1]),
                               h2_as_u32(wb[2 * s + 1])};
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const uint2 b = *reinterpret_cast<const uint2*>(buf + (nt * 8 + g) * kXRowStride + 4 * s);
          mma_16816(acc[nt], a, b.x, b.y);
        }
      }
    }
    __syncthreads();
  }
  if (!warp_active) return;

  float* out = p.out + split * p.split_stride + col_begin;
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const int n0 = nt * 8 + 2 * t;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int n = n0 + (j & 1);
      const int row = row_base + g + (j >> 1) * 8;
      if (n < p.n_seqs && row < n_rows) out[static_cast<int64_t>(n) * p.out_stride + row] = acc[nt][j];
    }
  }
}

template <TensorType kType>
__global__ void dequant_f16_kernel(const uint8_t* w, int64_t n_rows, int32_t n_tiles, int32_t record_bytes,
                                   __half* out) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // (row, tile, part)
  const int64_t total = n_rows * n_tiles * 4;
  if (idx >= total) return;
  const int t = static_cast<int>(idx & 3);
  const int64_t rt = idx >> 2;  // row * n_tiles + tile
  __half2 v[32];
  TileDequant<kType>::run(w + rt * record_bytes, t, v);
  uint4* dst = reinterpret_cast<uint4*>(out + rt * kTileElems + 64 * t);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    dst[j] = make_uint4(h2_as_u32(v[4 * j]), h2_as_u32(v[4 * j + 1]), h2_as_u32(v[4 * j + 2]),
                        h2_as_u32(v[4 * j + 3]));
  }
}

template <TensorType kType>
__global__ void embed_kernel(const uint8_t* table, int32_t n_tiles, int32_t record_bytes, int32_t n_cols,
                             const int32_t* tokens, float* out, int32_t out_stride) {
  const int i = blockIdx.x;
  const uint8_t* row = table + static_cast<int64_t>(tokens[i]) * n_tiles * record_bytes;
  for (int part = threadIdx.x; part < n_tiles * 4; part += blockDim.x) {
    const int tile = part >> 2, t = part & 3;
    __half2 v[32];
    TileDequant<kType>::run(row + static_cast<int64_t>(tile) * record_bytes, t, v);
    float* dst = out + static_cast<int64_t>(i) * out_stride;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int c = tile * kTileElems + 64 * t + 2 * j;
      const float2 f = __half22float2(v[j]);
      if (c < n_cols) dst[c] = f.x;
      if (c + 1 < n_cols) dst[c + 1] = f.y;
    }
  }
}

namespace detail {

template <TensorType kType, int kNT>
void launch_nt(const GemvParams& p, cudaStream_t stream) {
  int n_blocks = 0;
  for (int i = 0; i < p.n_mats; ++i) n_blocks += (p.n_rows[i] + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock;
  const size_t smem = 2 * kNT * 8 * kXRowStride * sizeof(__half);
  gemv_kernel<kType, kNT><<<dim3(n_blocks, p.n_splits), 128, smem, stream>>>(p);
  CHORUS_CUDA_CHECK_LAUNCH();
}

template <TensorType kType>
void launch_gemv_typed(const GemvParams& p, cudaStream_t stream) {
  switch ((p.n_seqs + 7) / 8) {
    case 1: launch_nt<kType, 1>(p, stream); break;
    case 2: launch_nt<kType, 2>(p, stream); break;
    case 3: launch_nt<kType, 3>(p, stream); break;
    default: launch_nt<kType, 4>(p, stream); break;
  }
}

template <TensorType kType>
void launch_dequant_typed(const uint8_t* w, int64_t n_rows, int32_t n_tiles, int32_t record_bytes, __half* out,
                          cudaStream_t stream) {
  const int64_t total = n_rows * n_tiles * 4;
  const int threads = 256;
  dequant_f16_kernel<kType><<<static_cast<unsigned>((total + threads - 1) / threads), threads, 0, stream>>>(
      w, n_rows, n_tiles, record_bytes, out);
  CHORUS_CUDA_CHECK_LAUNCH();
}

template <TensorType kType>
void launch_embed_typed(const uint8_t* table, int32_t n_tiles, int32_t record_bytes, int32_t n_cols,
                        const int32_t* tokens, int32_t n_tokens, float* out, int32_t out_stride,
                        cudaStream_t stream) {
  embed_kernel<kType><<<n_tokens, 128, 0, stream>>>(table, n_tiles, record_bytes, n_cols, tokens, out, out_stride);
  CHORUS_CUDA_CHECK_LAUNCH();
}

}  // namespace detail

#define CHORUS_INSTANTIATE_GEMV(T)                                                                         \
  template void detail::launch_gemv_typed<T>(const GemvParams&, cudaStream_t);                             \
  template void detail::launch_dequant_typed<T>(const uint8_t*, int64_t, int32_t, int32_t, __half*,        \
                                                cudaStream_t);                                             \
  template void detail::launch_embed_typed<T>(const uint8_t*, int32_t, int32_t, int32_t, const int32_t*,   \
                                              int32_t, float*, int32_t, cudaStream_t);

}  // namespace chorus::cuda
