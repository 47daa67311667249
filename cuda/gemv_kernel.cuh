#pragma once
// The batched GEMV kernel template (see gemv.h). Included by one .cu per type family so that
// nvcc's work is spread over several translation units.
#include <cuda_fp16.h>

#include "cuda/cuda_check.h"
#include "cuda/gemv.h"
#include "cuda/launch.cuh"
#include "cuda/quant_tile.cuh"
#include "cuda/weight_repack.h"

namespace chorus::cuda {

// Record size of one 256-element tile (weight_repack.h); the host table is checked against
// this in launch_nt.
constexpr int record_bytes_of(TensorType t) {
  switch (t) {
    case TensorType::F32: return 1024;
    case TensorType::F16: case TensorType::BF16: return 512;
    case TensorType::Q8_0: return 272;
    case TensorType::Q4_0: return 144;
    case TensorType::Q4_1: return 160;
    case TensorType::Q5_0: return 176;
    case TensorType::Q5_1: return 192;
    case TensorType::Q4_K: return 144;
    case TensorType::Q5_K: return 176;
    case TensorType::Q6_K: return 224;
    default: return 0;
  }
}

// Shared-memory activation tile: row n holds 256 halves in 4 groups of 64 (one per thread
// part t). Group stride 80 halves (40 words = 8 mod 32) and row stride 328 halves (164 words
// = 4 mod 32) keep the 16-byte B-fragment loads of each quarter-warp (lanes g = 2j, 2j+1,
// t = 0..3) on 8 distinct 4-bank slots, and every chunk 16-byte aligned for cp.async.
inline constexpr int kXGroupStride = 80;
inline constexpr int kXRowStride = 328;

// Pipeline shape for one (type, n-tiles) instantiation: each stage holds the activation tile
// (kNT*8 rows) and the 64 weight rows' records of one 256-element tile of K.
template <TensorType kType, int kNT>
struct GemvPipe {
  static constexpr int kRecord = record_bytes_of(kType);
  static constexpr int kStages = kRecord > 288 ? 2 : (kNT >= 3 ? 3 : 4);
  static constexpr int kXBytes = kNT * 8 * kXRowStride * 2;
  static constexpr int kWBytes = kGemvRowsPerBlock * kRecord;
  static constexpr int kStageBytes = kXBytes + kWBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  static_assert(kXBytes % 16 == 0 && kWBytes % 16 == 0, "stages must stay 16-byte aligned");
};

__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16-byte global -> shared copy that bypasses L1; zero-fills when !valid (src not read).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// One block = 64 rows (4 warps x 16) of one matrix x one split of K. A multistage cp.async
// pipeline keeps kStages-1 tiles (weights and activations) in flight while the warps
// dequantize and multiply the current one. The weight copies of the first stages are issued
// before pdl_wait(): weights are constant, so they stream while the previous kernel drains.
template <TensorType kType, int kNT>
__global__ void __launch_bounds__(128) gemv_kernel(const GemvParams p) {
  using Pipe = GemvPipe<kType, kNT>;
  constexpr int kRec = Pipe::kRecord, kS = Pipe::kStages;
  extern __shared__ __align__(16) uint8_t smem[];  // [kS][x tile | 64 weight records]

  // Which matrix and which 64-row block of it.
  int rb = blockIdx.x, mat = 0;
  const int blocks0 = (p.n_rows[0] + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock;
  const int blocks1 = (p.n_rows[1] + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock;
  if (p.n_mats > 1 && rb >= blocks0) {
    rb -= blocks0;
    mat = 1;
    if (p.n_mats > 2 && rb >= blocks1) { rb -= blocks1; mat = 2; }
  }
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  // Explicit selects keep the parameter arrays out of local memory.
  const int n_rows = mat == 0 ? p.n_rows[0] : (mat == 1 ? p.n_rows[1] : p.n_rows[2]);
  const uint8_t* w_mat = mat == 0 ? p.w[0] : (mat == 1 ? p.w[1] : p.w[2]);
  const int col_begin = mat == 0 ? p.col_begin[0] : (mat == 1 ? p.col_begin[1] : p.col_begin[2]);
  const int block_row0 = rb * kGemvRowsPerBlock;
  const int row_base = block_row0 + warp * 16;
  const bool warp_active = row_base < n_rows;
  const int64_t row_bytes = static_cast<int64_t>(p.n_tiles) * kRec;

  const int tile_begin = blockIdx.y * p.tiles_per_split;
  const int n_my = max(0, min(p.n_tiles, tile_begin + p.tiles_per_split) - tile_begin);

  auto stage_ptr = [&](int slot) { return smem + slot * Pipe::kStageBytes; };
  auto issue_w = [&](int i) {  // weight records of tile tile_begin+i into slot i % kS
    uint8_t* dst = stage_ptr(i % kS) + Pipe::kXBytes;
    const int64_t tile_off = static_cast<int64_t>(tile_begin + i) * kRec;
    constexpr int kChunksPerRow = kRec / 16, kChunks = kGemvRowsPerBlock * kChunksPerRow;
    for (int c = tid; c < kChunks; c += 128) {
      const int r = c / kChunksPerRow, k = c - r * kChunksPerRow;
      const int row = min(block_row0 + r, n_rows - 1);  // rows past the end duplicate the last (not stored)
      cp_async16(dst + r * kRec + 16 * k, w_mat + row * row_bytes + tile_off + 16 * k, true);
    }
  };
  auto issue_x = [&](int i) {  // activations of tile tile_begin+i, zero past M and K
    __half* dst = reinterpret_cast<__half*>(stage_ptr(i % kS));
    const int k_base = (tile_begin + i) * kTileElems;
    constexpr int kChunks = kNT * 8 * 32;
    for (int c = tid; c < kChunks; c += 128) {
      const int n = c >> 5, kc = (c & 31) * 8;
      const bool valid = n < p.n_seqs && k_base + kc < p.k_elems;
      const __half* src = valid ? p.x + static_cast<int64_t>(n) * p.x_stride + k_base + kc : p.x;
      cp_async16(dst + n * kXRowStride + (kc >> 6) * kXGroupStride + (kc & 63), src, valid);
    }
  };

#pragma unroll
  for (int i = 0; i < kS - 1; ++i) if (i < n_my) issue_w(i);
  pdl_wait();
#pragma unroll
  for (int i = 0; i < kS - 1; ++i) {
    if (i < n_my) issue_x(i);
    cp_async_commit();
  }
  pdl_trigger();

  float acc[kNT][4];
#pragma unroll
  for (int i = 0; i < kNT; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

  for (int it = 0; it < n_my; ++it) {
    cp_async_wait<kS - 2>();  // this thread's copies of stage `it` landed
    __syncthreads();          // everyone's did; and everyone is done with the slot refilled next
    const int nxt = it + kS - 1;
    if (nxt < n_my) {
      issue_w(nxt);
      issue_x(nxt);
    }
    cp_async_commit();
    if (warp_active) {
      const uint8_t* st = stage_ptr(it % kS);
      const uint8_t* w_st = st + Pipe::kXBytes + warp * 16 * kRec;
      __half2 wa[32], wb[32];
      TileDequant<kType>::run(w_st + g * kRec, t, wa);
      TileDequant<kType>::run(w_st + (g + 8) * kRec, t, wb);
      const __half* xb = reinterpret_cast<const __half*>(st) + t * kXGroupStride + g * kXRowStride;
#pragma unroll
      for (int s2 = 0; s2 < 8; ++s2) {
        const uint32_t a0[4] = {h2_as_u32(wa[4 * s2]), h2_as_u32(wb[4 * s2]), h2_as_u32(wa[4 * s2 + 1]),
                                h2_as_u32(wb[4 * s2 + 1])};
        const uint32_t a1[4] = {h2_as_u32(wa[4 * s2 + 2]), h2_as_u32(wb[4 * s2 + 2]), h2_as_u32(wa[4 * s2 + 3]),
                                h2_as_u32(wb[4 * s2 + 3])};
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const uint4 b = *reinterpret_cast<const uint4*>(xb + nt * 8 * kXRowStride + 8 * s2);
          mma_16816(acc[nt], a0, b.x, b.y);  // k-step 2*s2
          mma_16816(acc[nt], a1, b.z, b.w);  // k-step 2*s2+1
        }
      }
    }
  }
  cp_async_wait<0>();
  if (!warp_active) return;

  float* out = p.out + blockIdx.y * p.split_stride + col_begin;
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

// Thread idx dequantizes part (idx & 3) of tile record idx >> 2, i.e. the 64 halves at
// out[idx * 64]: consecutive threads own consecutive 128-byte pieces. Each warp first puts its
// 32 pieces in shared memory (pitch 144 B: conflict-free 16-byte accesses) and then writes the
// warp's 4 KB with consecutive lanes on consecutive 16 bytes, so every store instruction
// covers 512 contiguous bytes instead of 32 scattered 16-byte pieces.
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
    __half2 v[32];
    TileDequant<kType>::run(w + (idx >> 2) * record_bytes, t, v);
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
void prepare_nt() {
  CHORUS_CUDA_CHECK(cudaFuncSetAttribute(gemv_kernel<kType, kNT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         GemvPipe<kType, kNT>::kSmemBytes));
}

template <TensorType kType, int kNT>
void launch_nt(const GemvParams& p, cudaStream_t stream) {
  if (p.record_bytes != GemvPipe<kType, kNT>::kRecord) {
    throw CudaError("gemv: record of " + std::to_string(p.record_bytes) + " bytes, kernel expects " +
                    std::to_string(GemvPipe<kType, kNT>::kRecord));
  }
  int n_blocks = 0;
  for (int i = 0; i < p.n_mats; ++i) n_blocks += (p.n_rows[i] + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock;
  launch_pdl(gemv_kernel<kType, kNT>, dim3(n_blocks, p.n_splits), dim3(128), GemvPipe<kType, kNT>::kSmemBytes,
             stream, p);
}

template <TensorType kType>
void prepare_gemv_typed() {
  prepare_nt<kType, 1>();
  prepare_nt<kType, 2>();
  prepare_nt<kType, 3>();
  prepare_nt<kType, 4>();
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
  const int threads = kDequantThreads;
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
  template void detail::prepare_gemv_typed<T>();                                                            \
  template void detail::launch_gemv_typed<T>(const GemvParams&, cudaStream_t);                             \
  template void detail::launch_dequant_typed<T>(const uint8_t*, int64_t, int32_t, int32_t, __half*,        \
                                                cudaStream_t);                                             \
  template void detail::launch_embed_typed<T>(const uint8_t*, int32_t, int32_t, int32_t, const int32_t*,   \
                                              int32_t, float*, int32_t, cudaStream_t);

}  // namespace chorus::cuda
