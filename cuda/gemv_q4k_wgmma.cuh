#pragma once
// Q4_K GEMV tiles past 8 rows by warpgroup MMA (v32; perf-notes "The wgmma probe").
//
// Today's loop (gemv_q4k_exact.cuh) has every warp load its B fragments from shared memory,
// 4 16-byte loads a chunk at 32 rows, and issue 8 mma.sync m16n8k16 a chunk for 16 weight rows.
// Hopper's wgmma takes B from shared memory by descriptor once for the 4 warps of a warpgroup
// (64 rows) and every column group in one instruction. chorus-cuda-wgmma-probe measured the
// shape of this loop 24 % faster and its sums bit-identical to the warps' mma.sync, so N > 8
// keeps N <= 8's bits (batch invariance).
//
// The A fragments stay today's: lane t of a quad makes sc * q from its own part t of the record,
// so k-step (c, h) holds elements 64 t + 8 c + 4 h + {0, 1} (k 2t, 2t+1) and + {2, 3} (k 2t+8,
// 2t+9) of the tile. wgmma reads a k-step as 32 bytes of one 128-byte line of B. So x is staged
// line-major ([4 lines][rows][128 bytes], 128-byte swizzled: encode_gemv_x_lines_map) and every
// warp transposes 4 of its rows in place, a tile ahead of the wgmma on it: the 16-byte
// granule (line t, c) of a row holds words (h, half) = elements 8c + 4h + 2 half + {0, 1} of
// line t, and k-step 2c + h's half `half` is those words of the 4 lines side by side, stored at
// line c / 2, granule 4 (c % 2) + 2h + half. A row's 32 granules map onto themselves, so one warp
// transposes its rows with every load before any store. The sub-block sums are then read back
// from the transposed tile into today's registers (q4k_xsum_transposed).
//
// wgmma needs the sm_90a machine code (cuda/CMakeLists.txt); launch_gemv sets x_wgmma only on
// compute capability 9.0, where that code runs.
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/bulk_copy.cuh"
#include "cuda/gemv.h"
#include "cuda/gemv_q4k_exact.cuh"
#include "cuda/mma.cuh"

namespace chorus::cuda {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CHORUS_WGMMA 1
#else
#define CHORUS_WGMMA 0
#endif

__device__ __forceinline__ void wgmma_fence() {
#if CHORUS_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if CHORUS_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_wait_one() {  // all but the newest group complete
#if CHORUS_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_wait_all() {
#if CHORUS_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
}
// Generic-proxy stores to shared memory made visible to wgmma (the async proxy).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Keeps the compiler from moving accumulator reads and writes across the asynchronous wgmma.
template <int kN>
__device__ __forceinline__ void wgmma_fence_regs(float (&d)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(d[i]));
}

// B descriptor of k-step s of a line-major tile at `tile` (shared address, 1024-aligned):
// line s / 4, 32 bytes a step within it; 128-byte swizzle; 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t wgmma_x_desc(uint32_t tile, uint32_t line_bytes, int s) {
  const uint32_t addr = tile + static_cast<uint32_t>(s / 4) * line_bytes + static_cast<uint32_t>(s % 4) * 32;
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | static_cast<uint64_t>(1) << 16 |
         static_cast<uint64_t>(1024 >> 4) << 32 | static_cast<uint64_t>(1) << 62;
}

// d (64 x 8 kNT, this thread's 4 kNT) = A B + (accumulate ? d : 0), A from registers.
template <int kNT>
__device__ __forceinline__ void wgmma_q4k(float (&d)[4 * kNT], const uint32_t (&a)[4], uint64_t desc, int acc) {
#if CHORUS_WGMMA
  if constexpr (kNT == 2) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(acc));
  } else if constexpr (kNT == 3) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %17, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n24k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11}, "
        "{%12,%13,%14,%15}, %16, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(acc));
  } else {
    static_assert(kNT == 4, "2..4 column groups");
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
        "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(acc));
  }
#else
  __trap();  // launch_gemv sets x_wgmma only where the sm_90a code runs
#endif
}

// Transposes rows [row0, row0 + 4) of a line-major tile in place into wgmma's k-step order (file
// comment): lane l takes row row0 + l / 8, granule l % 8, and a row's 8 granules are 8 lanes of
// this warp, so every load is done before any store (the __syncwarp). Ends with the stores
// visible to wgmma (the async proxy). Rows past the tile's rows: nothing.
__device__ __forceinline__ void q4k_lines_transpose4(uint32_t tile, uint32_t line_bytes, int row0, int n_rows, int lane) {
  const int n = row0 + lane / 8, c = lane % 8;
  const bool mine = n < n_rows;
  const uint32_t row = tile + static_cast<uint32_t>(n) * 128, sw = static_cast<uint32_t>(n & 7);
  uint4 w[4];
  if (mine) {
#pragma unroll
    for (int t = 0; t < 4; ++t) w[t] = ld_shared_v4(row + t * line_bytes + ((static_cast<uint32_t>(c) ^ sw) << 4));
  }
  __syncwarp();  // every granule of the warp's rows is in registers before any is overwritten
  if (mine) {
    const uint32_t dst = row + static_cast<uint32_t>(c / 2) * line_bytes;
    const uint4 v[4] = {make_uint4(w[0].x, w[1].x, w[2].x, w[3].x), make_uint4(w[0].y, w[1].y, w[2].y, w[3].y),
                        make_uint4(w[0].z, w[1].z, w[2].z, w[3].z), make_uint4(w[0].w, w[1].w, w[2].w, w[3].w)};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      *static_cast<uint4*>(__cvta_shared_to_generic(dst + ((static_cast<uint32_t>(4 * (c % 2) + j) ^ sw) << 4))) = v[j];
    }
  }
  fence_proxy_async_shared();
  __syncwarp();
}

// Column group nt's sub-block sums from a transposed tile: lane (g, t)'s chunk c (today's 16
// bytes: words j of line t's granule c) gathered back from granules (c / 2, 4 (c % 2) + j), word
// t, so that q4k_xsum_from runs on today's registers and gives today's bits.
__device__ __forceinline__ uint32_t q4k_xsum_transposed(uint32_t tile, uint32_t line_bytes, int nt, int lane) {
  const int g = lane >> 2, t = lane & 3, n = 8 * nt + g;
  const uint32_t row = tile + static_cast<uint32_t>(n) * 128 + static_cast<uint32_t>(t) * 4;
  const uint32_t sw = static_cast<uint32_t>(n & 7);
  return q4k_xsum_from(
      [&](int c) {
        const uint32_t base = row + static_cast<uint32_t>(c / 2) * line_bytes;
        uint32_t v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          v[j] = *static_cast<const uint32_t*>(
              __cvta_shared_to_generic(base + ((static_cast<uint32_t>(4 * (c % 2) + j) ^ sw) << 4)));
        }
        return make_uint4(v[0], v[1], v[2], v[3]);
      },
      lane);
}

// One tile of the warpgroup's 64 rows against every activation row, in two halves so that the
// warp can prepare the next tile while the tensor cores run this one: issue() dequantizes and
// issues the 16 wgmma (tile-local sums P from zero, as warp_tile_q4k_exact's mma.sync chain) on
// the transposed tile at `tile`; finish() waits for them, scales P by d in f32 and adds the min
// product with the tile's sums, the same arithmetic as warp_tile_q4k_exact.
template <int kNT>
struct Q4KWgmmaTile {
  Q4KExactRow ra, rb;
  float p[4 * kNT];

  __device__ __forceinline__ void issue(const uint8_t* wt, uint32_t tile, uint32_t line_bytes, int lane) {
    constexpr int kRec = record_bytes_of(TensorType::Q4_K);
    const int g = lane >> 2, t = lane & 3;
    ra = q4k_exact_load(wt + g * kRec, t);
    rb = q4k_exact_load(wt + (g + 8) * kRec, t);
#pragma unroll
    for (int i = 0; i < 4 * kNT; ++i) p[i] = 0.0f;
    wgmma_fence_regs(p);
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      // The chunk's words pass through an empty volatile asm, ordered after the last wgmma, so
      // that the compiler makes each chunk's A just before its wgmma instead of all 16 k-steps'
      // (64 registers) up front.
      const int w0 = 2 * (c & 3);
      asm volatile("" : "+r"(ra.q[w0]), "+r"(ra.q[w0 + 1]), "+r"(rb.q[w0]), "+r"(rb.q[w0 + 1]));
      __half2 wa[4], wb[4];
      q4k_exact_chunk(ra, c, wa);
      q4k_exact_chunk(rb, c, wb);
      const uint32_t a0[4] = {h2_as_u32(wa[0]), h2_as_u32(wb[0]), h2_as_u32(wa[1]), h2_as_u32(wb[1])};
      const uint32_t a1[4] = {h2_as_u32(wa[2]), h2_as_u32(wb[2]), h2_as_u32(wa[3]), h2_as_u32(wb[3])};
      wgmma_fence();  // a0 / a1 were written since the last wgmma
      wgmma_q4k<kNT>(p, a0, wgmma_x_desc(tile, line_bytes, 2 * c), c > 0);
      wgmma_q4k<kNT>(p, a1, wgmma_x_desc(tile, line_bytes, 2 * c + 1), 1);
      // A registers are read asynchronously: they stay live until their group completes. A
      // group per chunk, at most two in flight, keeps 16 of them live instead of 64.
      wgmma_commit();
      if (c > 0) wgmma_wait_one();
    }
  }

  __device__ __forceinline__ void finish(float (&acc)[kNT][4], const uint32_t* xsum_tile, int lane) {
    wgmma_wait_all();
    wgmma_fence_regs(p);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const uint32_t b_min = xsum_tile[nt * 32 + lane];
      acc[nt][0] = fmaf(ra.d, p[4 * nt + 0], acc[nt][0]);
      acc[nt][1] = fmaf(ra.d, p[4 * nt + 1], acc[nt][1]);
      acc[nt][2] = fmaf(rb.d, p[4 * nt + 2], acc[nt][2]);
      acc[nt][3] = fmaf(rb.d, p[4 * nt + 3], acc[nt][3]);
      mma_1688(acc[nt], ra.neg_min, rb.neg_min, b_min);
    }
  }
};

}  // namespace chorus::cuda
