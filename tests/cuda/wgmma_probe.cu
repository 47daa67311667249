// chorus-cuda-wgmma-probe: whether the GEMV's tile loop past 8 rows should move from mma.sync
// to Hopper's warpgroup MMA (wgmma). Session 26's diagnostic builds (perf-notes) showed the 8B
// step at N = 32 bound by each warp's tile work: loading the tile's B fragments once instead of
// once per column group cut the traced step 9 %, and issuing no tensor-core instruction 19 %.
// wgmma takes B straight from shared memory, once for the 4 warps of a warpgroup, and one
// instruction covers the 4 column groups. Two questions, before any kernel is rewritten:
//
//  1. Bits. Batch invariance needs a sequence's result the same at every N; one column group
//     (N <= 8) would keep mma.sync, so wgmma's sums must equal mma.sync's bit for bit. The probe
//     multiplies the same 64 x 256 A (exact integers, as the Q4_K route's sc * q, and general
//     f16) by a 256 x 32 B both ways and compares every element.
//  2. Rate. A loop shaped like the Q4_K tile loop (per lane: a tile's 8 words of weights from
//     shared memory, 2 instructions per 2 weights to make A, 16 k-steps), 16 warps a
//     multiprocessor, B from shared memory: mma.sync with 16-byte B loads per column group
//     (today's loop) against wgmma, at 32 rows (m64n32k16) and at one column group (m64n8k16,
//     N <= 8). Prints ns per warp-tile per multiprocessor.
//
// Usage: chorus-cuda-wgmma-probe [tiles_per_warp=256]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_memory.h"
#include "cuda/mma.cuh"
#include "probe_timing.cuh"

namespace {

using chorus::cuda::DeviceBuffer;
using chorus::cuda::probe::global_ns;
using chorus::cuda::probe::RateOut;

constexpr int kRowsWg = 64;    // a warpgroup's rows (4 warps x 16)
constexpr int kCols = 32;      // activation rows (4 column groups of 8)
constexpr int kTileK = 256;    // a tile's k (one quant record)
constexpr int kLines = 4;      // 64-element lines of a tile's k
constexpr int kLineBytes = 128;
// B in shared memory, K-major with the 128-byte swizzle that a copy-engine box lands in:
// [line][col][128 bytes], granule c of col n at granule c ^ (n % 8). wgmma reads it by
// descriptor; the mma.sync loop reads the same bytes.
constexpr int kBBytes = kLines * kCols * kLineBytes;  // 16 KB

__host__ __device__ inline int b_offset(int n, int k) {  // bytes, element (col n, k)
  const int line = k / 64, kk = k % 64;
  return line * kCols * kLineBytes + n * kLineBytes + (((kk / 8) ^ (n % 8)) << 4) + (kk % 8) * 2;
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

// Shared-memory matrix descriptor (PTX ISA, wgmma): start address, leading and stride byte
// offsets (>> 4), 128-byte swizzle in bits 62-63. K-major with a 128-byte swizzle: the
// 16-element k-step lies within one 128-byte row, so the leading offset is unused (1); 8-col
// groups are 1024 bytes apart.
__device__ __forceinline__ uint64_t b_desc(uint32_t addr) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>(1) << 16;
  d |= static_cast<uint64_t>(1024 >> 4) << 32;
  d |= static_cast<uint64_t>(1) << 62;
  return d;
}

// B descriptor of k-step s (k = 16 s .. 16 s + 15): line s / 4, 32 bytes per step within it.
__device__ __forceinline__ uint64_t b_desc_step(uint32_t b_base, int s) {
  return b_desc(b_base + (s / 4) * kCols * kLineBytes + (s % 4) * 32);
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

// d (64 x 32, this thread's 16) = A (regs) B (desc) + (accumulate ? d : 0).
__device__ __forceinline__ void wgmma_m64n32k16(float (&d)[16], const uint32_t (&a)[4], uint64_t desc, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));
}

// d (64 x 8, this thread's 4) = A (regs) B (desc) + (accumulate ? d : 0): one column group.
__device__ __forceinline__ void wgmma_m64n8k16(float (&d)[4], const uint32_t (&a)[4], uint64_t desc, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));
}

// Keeps the compiler from moving accumulator reads and writes across the async wgmma.
template <int kN>
__device__ __forceinline__ void fence_regs(float (&d)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// ---- helpers of the bits kernels ----
// a_frag: [warp][k-step][lane][4] words of A fragments (mma.sync m16n8k16 layout, rows 16w..).
__device__ __forceinline__ void load_a_fragments(const uint32_t* a_frag, uint32_t (&a)[16][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int s = 0; s < 16; ++s) {
#pragma unroll
    for (int j = 0; j < 4; ++j) a[s][j] = a_frag[((warp * 16 + s) * 32 + lane) * 4 + j];
  }
}

// 16 chained mma.sync per column group nt; load_b(n, s) gives column n's B registers of k-step s.
template <typename LoadB>
__device__ __forceinline__ void mma_sync_chains(const uint32_t (&a)[16][4], LoadB load_b, float (&c)[4][4]) {
  const int g = (threadIdx.x % 32) / 4;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
    for (int s = 0; s < 16; ++s) {
      const uint2 b = load_b(nt * 8 + g, s);
      if (s == 0) {
        chorus::cuda::mma_16816_first(c[nt], a[s], b.x, b.y);
      } else {
        chorus::cuda::mma_16816(c[nt], a[s], b.x, b.y);
      }
    }
  }
}

// 16 chained wgmma m64n32k16 from zero; desc(s) is k-step s's B descriptor.
template <typename Desc>
__device__ __forceinline__ void wgmma_chain32(const uint32_t (&a)[16][4], Desc desc, float (&d)[16]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) d[i] = 0.0f;
  fence_regs(d);
  wg_fence();
#pragma unroll
  for (int s = 0; s < 16; ++s) wgmma_m64n32k16(d, a[s], desc(s), s > 0);
  wg_commit();
  wg_wait0();
  fence_regs(d);
}

// Column group nt's 4 values of this thread (mma.sync C and wgmma D layout alike: rows 16 w + g
// (+8), cols 8 nt + 2t (+1)) into out [64][cols].
__device__ __forceinline__ void store_group(float* out, int cols, int nt, float v0, float v1, float v2, float v3) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r0 = warp * 16 + g, c0 = nt * 8 + 2 * t;
  out[r0 * cols + c0] = v0;
  out[r0 * cols + c0 + 1] = v1;
  out[(r0 + 8) * cols + c0] = v2;
  out[(r0 + 8) * cols + c0 + 1] = v3;
}

// Both routes' [64][32] results: mma.sync's c into out_sync, wgmma's d into out_wg.
__device__ __forceinline__ void store_both(float* out_sync, float* out_wg, const float (&c)[4][4], const float (&d)[16]) {
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    store_group(out_sync, kCols, nt, c[nt][0], c[nt][1], c[nt][2], c[nt][3]);
    store_group(out_wg, kCols, nt, d[4 * nt], d[4 * nt + 1], d[4 * nt + 2], d[4 * nt + 3]);
  }
}

// ---- 1. bits ----
// a_frag: [warp][k-step][lane][4] words of A fragments (mma.sync m16n8k16 layout, rows 16w..);
// b: 256 x 32 as f16 in b_offset layout. out_sync / out_wg: [64][32] f32.
__global__ void __launch_bounds__(128) bits_kernel(const uint32_t* a_frag, const uint8_t* b, float* out_sync,
                                                   float* out_wg, float* out_wg8) {
  __shared__ __align__(1024) uint8_t bs[kBBytes];
  for (int i = threadIdx.x; i < kBBytes / 16; i += blockDim.x) reinterpret_cast<uint4*>(bs)[i] = reinterpret_cast<const uint4*>(b)[i];
  __syncthreads();
  const int t = threadIdx.x % 4;
  const uint32_t base = smem_u32(bs);
  uint32_t a[16][4];
  load_a_fragments(a_frag, a);
  // mma.sync: k-step s of column n: B rows (k) 2t, 2t+1 and 2t+8, 2t+9.
  float c[4][4];
  mma_sync_chains(
      a, [&](int n, int s) { return make_uint2(lds32(base + b_offset(n, 16 * s + 2 * t)), lds32(base + b_offset(n, 16 * s + 2 * t + 8))); },
      c);
  float d[16];
  wgmma_chain32(a, [&](int s) { return b_desc_step(base, s); }, d);
  float d8[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // one column group (cols 0-7) by m64n8k16
  fence_regs(d8);
  wg_fence();
#pragma unroll
  for (int s = 0; s < 16; ++s) wgmma_m64n8k16(d8, a[s], b_desc_step(base, s), s > 0);
  wg_commit();
  wg_wait0();
  fence_regs(d8);
  store_group(out_wg8, 8, 0, d8[0], d8[1], d8[2], d8[3]);
  store_both(out_sync, out_wg, c, d);
}

// ---- 1b. bits in the GEMV's own k order ----
// Today's Q4_K A fragments take lane t's elements from line t of the tile: k-step (c, h) holds
// elements 64 t + 8 c + 4 h + {0, 1} at k 2t, 2t+1 and + {2, 3} at k 2t+8, 2t+9, and the
// GEMV's x layout is [row][line][128 bytes], granule c at c ^ (4 (row & 1) + line). wgmma
// cannot read that k order from there, but a 4 x 4 transpose of 4-byte words per (row,
// granule c) gives core matrices it reads without swizzle: [k-step][k half][row][16 bytes],
// the two k halves 512 bytes apart (leading offset), 8-row groups 128 (stride offset).
__host__ __device__ inline int gemv_x_offset(int n, int k) {  // bytes, today's x layout
  const int t = k / 64, c = (k % 64) / 8;
  return n * 512 + t * 128 + ((c ^ (((n & 1) << 2) | t)) << 4) + (k % 8) * 2;
}

__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t swizzle) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | static_cast<uint64_t>(lbo >> 4) << 16 |
         static_cast<uint64_t>(sbo >> 4) << 32 | static_cast<uint64_t>(swizzle) << 62;
}

__global__ void __launch_bounds__(128) bits_gemv_order_kernel(const uint32_t* a_frag, const uint8_t* b,
                                                              float* out_sync, float* out_wg) {
  __shared__ __align__(1024) uint8_t xs[kBBytes];  // today's layout
  __shared__ __align__(1024) uint8_t ps[kBBytes];  // the transposed copy wgmma reads
  for (int i = threadIdx.x; i < kBBytes / 16; i += blockDim.x) reinterpret_cast<uint4*>(xs)[i] = reinterpret_cast<const uint4*>(b)[i];
  __syncthreads();
  for (int item = threadIdx.x; item < kCols * 8; item += blockDim.x) {  // (row n, granule c)
    const int n = item / 8, c = item % 8;
    uint32_t w[4][4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      const uint4 v = *reinterpret_cast<const uint4*>(xs + n * 512 + t * 128 + ((c ^ (((n & 1) << 2) | t)) << 4));
      w[t][0] = v.x; w[t][1] = v.y; w[t][2] = v.z; w[t][3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {  // j = 2 h + half: k-step 2c + h
      const int step = 2 * c + j / 2, half = j % 2;
      *reinterpret_cast<uint4*>(ps + ((step * 2 + half) * kCols + n) * 16) = make_uint4(w[0][j], w[1][j], w[2][j], w[3][j]);
    }
  }
  __syncthreads();
  const int t = threadIdx.x % 4;
  uint32_t a[16][4];
  load_a_fragments(a_frag, a);
  float c4[4][4];
  mma_sync_chains(  // as warp_tile_mma: one 16-byte load per two k-steps
      a,
      [&](int n, int s) {
        const uint4 v = *reinterpret_cast<const uint4*>(xs + n * 512 + t * 128 + (((s / 2) ^ (((n & 1) << 2) | t)) << 4));
        return s % 2 ? make_uint2(v.z, v.w) : make_uint2(v.x, v.y);
      },
      c4);
  float d[16];
  const uint32_t pbase = smem_u32(ps);
  wgmma_chain32(a, [&](int s) { return make_desc(pbase + s * 2 * kCols * 16, kCols * 16, 128, 0); }, d);
  store_both(out_sync, out_wg, c4, d);
}

// ---- 2. rate ----
// 8 warps (two warpgroups) a block, two blocks a multiprocessor, as the GEMV's 32-row blocks.
// Each warp runs `tiles` tiles: per tile its lane's 8 words of weights from shared memory, A
// made by lop3 + hfma2 per word half (as q4k_exact_chunk), 16 k-steps against the block's B.
constexpr int kRateWarps = 8;
constexpr int kWBytesWarp = 16 * 144;  // a warp's Q4_K stage

__device__ __forceinline__ uint32_t lop3_ea(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

__device__ __forceinline__ uint32_t make_a(uint32_t v, uint32_t mul, uint32_t bias) {
  __half2 h;
  uint32_t x = lop3_ea(v, 0x000F000Fu, 0x64006400u);
  memcpy(&h, &x, 4);
  __half2 m, b;
  memcpy(&m, &mul, 4);
  memcpy(&b, &bias, 4);
  h = __hfma2(h, m, b);
  uint32_t r;
  memcpy(&r, &h, 4);
  return r;
}

// A fragments of two k-steps from one word of nibbles (8 weights a lane, as q4k_exact_chunk).
__device__ __forceinline__ void make_chunk(uint32_t v, uint32_t mul, uint32_t bias, uint32_t (&a0)[4], uint32_t (&a1)[4]) {
  a0[0] = make_a(v, mul, bias);
  a0[1] = make_a(v >> 8, mul, bias);
  a0[2] = make_a(v >> 4, mul, bias);
  a0[3] = make_a(v >> 12, mul, bias);
  a1[0] = make_a(v >> 16, mul, bias);
  a1[1] = make_a(v >> 24, mul, bias);
  a1[2] = make_a(v >> 20, mul, bias);
  a1[3] = make_a(v >> 28, mul, bias);
}

// kNT column groups (8 activation rows each): 4 is the 32-row loop, 1 the one-row-group loop
// (N <= 8, where 7 of a column group's 8 columns may be padding).
template <bool kWgmma, int kNT>
__global__ void __launch_bounds__(kRateWarps * 32, 2) rate_kernel(int tiles, RateOut* out) {
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t* bs = smem;                                      // kBBytes
  uint8_t* ws = smem + kBBytes;                            // kRateWarps * kWBytesWarp
  for (int i = threadIdx.x; i < (kBBytes + kRateWarps * kWBytesWarp) / 4; i += blockDim.x) {
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3C003C00u ^ (i * 2654435761u & 0x03FF03FFu);
  }
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint32_t b_base = smem_u32(bs), w_lane = smem_u32(ws + warp * kWBytesWarp + lane * 16);
  const uint32_t mul = 0x3C003C00u, bias = 0xE400E400u;
  constexpr int kAcc = 4 * kNT;
  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
  __syncthreads();
  const uint64_t t0 = global_ns();
#pragma unroll 1
  for (int tile = 0; tile < tiles; ++tile) {
    uint32_t q[8];
    const uint32_t wq = w_lane + (tile & 1) * 512;
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n" : "=r"(q[0]), "=r"(q[1]), "=r"(q[2]), "=r"(q[3]) : "r"(wq));
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n" : "=r"(q[4]), "=r"(q[5]), "=r"(q[6]), "=r"(q[7]) : "r"(wq + 512));
    float p[kAcc];
    if constexpr (kWgmma) {
#pragma unroll
      for (int i = 0; i < kAcc; ++i) p[i] = 0.0f;
      fence_regs(p);
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        uint32_t a0[4], a1[4];
        make_chunk(q[c], mul, bias, a0, a1);
        wg_fence();  // a0 / a1 were written since the last wgmma
        if constexpr (kNT == 4) {
          wgmma_m64n32k16(p, a0, b_desc_step(b_base, 2 * c), c > 0);
          wgmma_m64n32k16(p, a1, b_desc_step(b_base, 2 * c + 1), 1);
        } else {
          wgmma_m64n8k16(p, a0, b_desc_step(b_base, 2 * c), c > 0);
          wgmma_m64n8k16(p, a1, b_desc_step(b_base, 2 * c + 1), 1);
        }
      }
      wg_commit();
      wg_wait0();
      fence_regs(p);
    } else {
      // Today's loop: a 16-byte B load per column group covers k-steps 2c and 2c + 1.
      float pm[kNT][4];
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        uint32_t a0[4], a1[4];
        make_chunk(q[c], mul, bias, a0, a1);
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          uint32_t b[4];
          const uint32_t addr = b_base + (nt * 8 + g) * 512 + t * 128 + ((c ^ ((g & 1) * 4 + t)) << 4);
          asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n" : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "r"(addr));
          if (c == 0) {
            chorus::cuda::mma_16816_first(pm[nt], a0, b[0], b[1]);
          } else {
            chorus::cuda::mma_16816(pm[nt], a0, b[0], b[1]);
          }
          chorus::cuda::mma_16816(pm[nt], a1, b[2], b[3]);
        }
      }
#pragma unroll
      for (int i = 0; i < kAcc; ++i) p[i] = pm[i / 4][i % 4];
    }
    const float d = 1.0f + static_cast<float>(tile & 7) * 0.125f;
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = fmaf(d, p[i], acc[i]);
  }
  __syncthreads();
  const uint64_t t1 = global_ns();
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kAcc; ++i) s += acc[i];
  if (threadIdx.x == 0) {
    out[blockIdx.x].ns = t1 - t0;
    out[blockIdx.x].sink = s;
  }
}

float h2f(uint16_t b) {
  __half h;
  std::memcpy(&h, &b, 2);
  return __half2float(h);
}
uint16_t f2h(float f) {
  const __half h = __float2half_rn(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

// A's fragments for the bits kernels: warp w, k-step s, lane (g, t) hold rows 16w + g (+8) at
// the k pairs first_k(s, t) and second_k(s, t).
template <typename FirstK, typename SecondK>
std::vector<uint32_t> a_fragments(const std::vector<float>& a, FirstK first_k, SecondK second_k) {
  auto pack = [&](int r, int k) {
    return static_cast<uint32_t>(f2h(a[r * kTileK + k])) | (static_cast<uint32_t>(f2h(a[r * kTileK + k + 1])) << 16);
  };
  std::vector<uint32_t> frag(4 * 16 * 32 * 4);
  for (int w = 0; w < 4; ++w)
    for (int s = 0; s < 16; ++s)
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4, r = w * 16 + g, k0 = first_k(s, t), k1 = second_k(s, t);
        uint32_t* f = &frag[((w * 16 + s) * 32 + lane) * 4];
        f[0] = pack(r, k0);
        f[1] = pack(r + 8, k0);
        f[2] = pack(r, k1);
        f[3] = pack(r + 8, k1);
      }
  return frag;
}

// B (256 x 32 f16 values) in a shared-memory layout given by its byte offset function.
template <typename Offset>
std::vector<uint8_t> b_bytes(const std::vector<float>& bm, Offset offset) {
  std::vector<uint8_t> b(kBBytes);
  for (int n = 0; n < kCols; ++n)
    for (int k = 0; k < kTileK; ++k) {
      const uint16_t h = f2h(bm[k * kCols + n]);
      std::memcpy(&b[offset(n, k)], &h, 2);
    }
  return b;
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer<T>& d, size_t n) {
  std::vector<T> h(n);
  CHORUS_CUDA_CHECK(cudaMemcpy(h.data(), d.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// Element (r, n) against a double sum: |err| / sum |x|.
double rel_error(const std::vector<float>& a, const std::vector<float>& bm, int r, int n, float got) {
  double ref = 0.0, mag = 0.0;
  for (int k = 0; k < kTileK; ++k) {
    const double x = static_cast<double>(h2f(f2h(a[r * kTileK + k]))) * h2f(f2h(bm[k * kCols + n]));
    ref += x;
    mag += std::fabs(x);
  }
  return std::fabs(got - ref) / (mag + 1e-30);
}

int count_differing(const std::vector<float>& x, const std::vector<float>& y, int cols_x, int cols_y, int cols) {
  int differ = 0;
  for (int r = 0; r < kRowsWg; ++r)
    for (int n = 0; n < cols; ++n) differ += std::memcmp(&x[r * cols_x + n], &y[r * cols_y + n], 4) != 0;
  return differ;
}

struct BitsRun {
  std::vector<float> sync, wg, wg8;
};

// Runs one bits kernel (kernel(frag, b, sync, wg, wg8)) on A's fragments and B's bytes.
template <typename Launch>
BitsRun run_bits(const std::vector<uint32_t>& frag, const std::vector<uint8_t>& b, Launch launch) {
  DeviceBuffer<uint32_t> d_frag(frag.size());
  DeviceBuffer<uint8_t> d_b(b.size());
  DeviceBuffer<float> d_sync(kRowsWg * kCols), d_wg(kRowsWg * kCols), d_wg8(kRowsWg * 8);
  CHORUS_CUDA_CHECK(cudaMemcpy(d_frag.get(), frag.data(), frag.size() * 4, cudaMemcpyHostToDevice));
  CHORUS_CUDA_CHECK(cudaMemcpy(d_b.get(), b.data(), b.size(), cudaMemcpyHostToDevice));
  launch(d_frag.get(), d_b.get(), d_sync.get(), d_wg.get(), d_wg8.get());
  CHORUS_CUDA_CHECK(cudaGetLastError());
  return {to_host(d_sync, kRowsWg * kCols), to_host(d_wg, kRowsWg * kCols), to_host(d_wg8, kRowsWg * 8)};
}

// One bits case: A 64 x 256 and B 256 x 32 (as f16 values), k in natural order, B in wgmma's
// swizzled layout: mma.sync against wgmma m64n32k16 and m64n8k16.
bool bits_case(const char* name, const std::vector<float>& a, const std::vector<float>& bm) {
  const auto frag = a_fragments(a, [](int s, int t) { return 16 * s + 2 * t; }, [](int s, int t) { return 16 * s + 2 * t + 8; });
  const BitsRun out = run_bits(frag, b_bytes(bm, b_offset), [](const uint32_t* f, const uint8_t* b, float* sy, float* wg, float* wg8) {
    bits_kernel<<<1, 128>>>(f, b, sy, wg, wg8);
  });
  double worst_sync = 0.0, worst_wg = 0.0;
  for (int r = 0; r < kRowsWg; ++r)
    for (int n = 0; n < kCols; ++n) {
      worst_sync = std::max(worst_sync, rel_error(a, bm, r, n, out.sync[r * kCols + n]));
      worst_wg = std::max(worst_wg, rel_error(a, bm, r, n, out.wg[r * kCols + n]));
    }
  std::printf("bits %-22s differ from mma.sync: m64n32k16 %d of %d, m64n8k16 %d of %d; worst |err| / sum|x|: "
              "mma.sync %.3g, wgmma %.3g\n",
              name, count_differing(out.sync, out.wg, kCols, kCols, kCols), kRowsWg * kCols,
              count_differing(out.sync, out.wg8, kCols, 8, 8), kRowsWg * 8, worst_sync, worst_wg);
  return worst_wg < 1e-5;
}

// The same product with A in the GEMV's k order (1b): today's mma.sync loop against wgmma on
// the transposed copy.
bool bits_gemv_order_case(const char* name, const std::vector<float>& a, const std::vector<float>& bm) {
  auto first = [](int s, int t) { return 64 * t + 8 * (s / 2) + 4 * (s % 2); };
  const auto frag = a_fragments(a, first, [&](int s, int t) { return first(s, t) + 2; });
  const BitsRun out = run_bits(frag, b_bytes(bm, gemv_x_offset), [](const uint32_t* f, const uint8_t* b, float* sy, float* wg, float*) {
    bits_gemv_order_kernel<<<1, 128>>>(f, b, sy, wg);
  });
  double worst = 0.0;
  for (int r = 0; r < kRowsWg; ++r)
    for (int n = 0; n < kCols; ++n) worst = std::max(worst, rel_error(a, bm, r, n, out.wg[r * kCols + n]));
  std::printf("bits %-22s GEMV k order, wgmma on the transposed copy: %d of %d differ from today's loop; "
              "worst |err| / sum|x| %.3g\n",
              name, count_differing(out.sync, out.wg, kCols, kCols, kCols), kRowsWg * kCols, worst);
  return worst < 1e-5;
}

}  // namespace

int main(int argc, char** argv) {
  const int tiles = argc > 1 ? std::atoi(argv[1]) : 256;
  std::mt19937 rng(26);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> q(0, 15), sc(0, 63);
  std::vector<float> a(kRowsWg * kTileK), bm(kTileK * kCols);
  for (auto& x : bm) x = normal(rng);
  for (int r = 0; r < kRowsWg; ++r)
    for (int j = 0; j < 8; ++j) {
      const int s = sc(rng);
      for (int k = 0; k < 32; ++k) a[r * kTileK + 32 * j + k] = static_cast<float>(s * q(rng));
    }
  bool ok = bits_case("A = sc * q (Q4_K)", a, bm);
  ok = bits_gemv_order_case("A = sc * q (Q4_K)", a, bm) && ok;
  for (auto& x : a) x = normal(rng);
  ok = bits_case("A normal f16", a, bm) && ok;
  ok = bits_gemv_order_case("A normal f16", a, bm) && ok;
  for (auto& x : bm) x = normal(rng) * 100.0f;
  ok = bits_case("A normal, B x100", a, bm) && ok;
  if (!ok) {
    std::printf("wgmma results are wrong (layout or descriptor): no rates\n");
    return 4;
  }

  int n_sms = 0;
  CHORUS_CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t smem = kBBytes + kRateWarps * kWBytesWarp;
  const int blocks = 2 * n_sms;
  DeviceBuffer<RateOut> out(static_cast<size_t>(blocks));
  auto rate = [&](auto kernel, const char* name) {
    // Warp-tiles a multiprocessor: 2 blocks x 8 warps x tiles.
    const auto r = chorus::cuda::probe::tile_rate(kernel, kRateWarps, 2, static_cast<int>(smem), tiles, out);
    std::printf("rate %-34s %8.1f ns per warp-tile a multiprocessor (%d tiles a warp, slowest block %.1f us)\n", name,
                r.ns_per_warp_tile, tiles, r.slowest_block_ns / 1e3);
  };
  rate(rate_kernel<false, 4>, "32 rows: mma.sync, 16-byte B loads");
  rate(rate_kernel<true, 4>, "32 rows: wgmma m64n32k16");
  rate(rate_kernel<false, 1>, "8 rows: mma.sync, 16-byte B loads");
  rate(rate_kernel<true, 1>, "8 rows: wgmma m64n8k16");
  return 0;
}
