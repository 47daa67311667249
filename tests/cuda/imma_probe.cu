// chorus-cuda-imma-probe: measures the integer Q4_K tile that perf-notes ("Next lever at N <= 8")
// estimates, before any of it is built into the GEMV.
//
// The route: activations rounded to int8 with an f32 scale per 32 (per sub-block), per 256 (per
// tile) or per 32 in power-of-two steps below the tile's, the weights' nibbles as u8, and
// mma.sync m16n8k32 (u8 x s8 -> s32) with each k-step one Q4_K sub-block of every row. Its int32
// results are exact, so the sub-block scale d * sc_j can be applied after the product. At one
// column group today's tile spends a lop3 + hfma2 on every two weights and 16 f16 mma whose k
// positions mix four sub-blocks. This program answers two questions on the device:
// 1. bits: one warp's 16 x 256 tile against 8 columns, at each scale granularity, against a CPU
//    sum of the same rounded operands (the route's own error), and how far the int8 rounding
//    moves the result from the unrounded activations (what the route would cost in accuracy);
// 2. rate: warp-tiles a multiprocessor of today's tile (warp_tile_q4k_exact<1>, the GEMV's own
//    code, records in shared memory) and of the three integer tiles, in the same launch shape as
//    the one-column-group GEMV (4 warps a block, 4 blocks a multiprocessor).
// The min term (dmin m_j times the sub-block sums) is today's one m16n8k8 in every loop.
// 3. past 8 rows: the route is worth building only if every N can take it (one route for all
//    batch sizes keeps the results batch-invariant), so the rates of today's tile and of the
//    2^-e tile at 2 and 4 column groups (16 and 32 rows, the GEMV's 8-warp launch shape), where
//    the integer epilogue (a shift and an IMAD a value and k-step) grows with the columns while
//    the weights' unpacking is shared.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <type_traits>
#include <vector>

#include "cuda/bulk_copy.cuh"
#include "cuda/cuda_check.h"
#include "cuda/device_memory.h"
#include "probe_timing.cuh"
#include "cuda/gemv_kernel.cuh"

using chorus::cuda::DeviceBuffer;
using chorus::cuda::probe::global_ns;
using chorus::cuda::probe::RateOut;

namespace {

constexpr int kRows = 16, kTileK = 256, kCols = 8, kSub = 8;

// d = A (16 x 32, u8) B (32 x 8, s8), exact int32. Lane (g, t): a0 / a2 row g, a1 / a3 row g + 8,
// k = 4t..4t+3 (a0, a1) and 16 + 4t.. (a2, a3); b0 / b1 column g at the same k; d0, d1 row g,
// columns 2t, 2t + 1, d2, d3 row g + 8.
__device__ __forceinline__ void imma_16832(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

__device__ __forceinline__ uint32_t pack4(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// ---- 1. bits ----
// q [16][256] nibble values, xq [8][256] int8, dsc [16][8] = d sc_j, xs [8][n_scales] with
// n_scales 8 (per sub-block) or 1 (per tile). y [16][8] = sum_j (dsc_j xs_j) D_j, j in order.
__global__ void bits_kernel(const uint8_t* q, const int8_t* xq, const float* dsc, const float* xs, int n_scales,
                            float* y) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int j = 0; j < kSub; ++j) {
    const int k0 = 32 * j + 4 * t;
    const uint32_t a[4] = {pack4(q + g * kTileK + k0), pack4(q + (g + 8) * kTileK + k0),
                           pack4(q + g * kTileK + k0 + 16), pack4(q + (g + 8) * kTileK + k0 + 16)};
    const uint8_t* xc = reinterpret_cast<const uint8_t*>(xq) + g * kTileK + k0;
    int d[4];
    imma_16832(d, a, pack4(xc), pack4(xc + 16));
    const int s = n_scales == 1 ? 0 : j;
    for (int i = 0; i < 4; ++i) {
      const int r = g + 8 * (i / 2), c = 2 * t + i % 2;
      acc[i] = fmaf(dsc[r * kSub + j] * xs[c * n_scales + s], static_cast<float>(d[i]), acc[i]);
    }
  }
  for (int i = 0; i < 4; ++i) y[(g + 8 * (i / 2)) * kCols + 2 * t + i % 2] = acc[i];
}

struct BitsResult {
  double route_err = 0, rounding_err = 0;  // worst |.| / sum |w x| over the outputs
};

// One granularity: x rounded to int8 per `span` elements (32 or 256) of each column.
// pow2: span 32, each scale the column's per-256 scale times 2^-e, e = 0..5 (kIntPow2).
BitsResult bits_case(const std::vector<uint8_t>& q, const std::vector<float>& dsc, const std::vector<float>& x,
                     int span, bool pow2 = false) {
  const int n_scales = kTileK / span;
  std::vector<int8_t> xq(x.size());
  std::vector<float> xs(static_cast<size_t>(kCols * n_scales));
  for (int c = 0; c < kCols; ++c)
    for (int s = 0; s < n_scales; ++s) {
      float amax = 0;
      for (int k = 0; k < span; ++k) amax = std::max(amax, std::fabs(x[c * kTileK + s * span + k]));
      float scale = amax > 0 ? amax / 127.0f : 1.0f;
      if (pow2) {
        float tmax = 0;
        for (int k = 0; k < kTileK; ++k) tmax = std::max(tmax, std::fabs(x[c * kTileK + k]));
        const float tile_scale = tmax > 0 ? tmax / 127.0f : 1.0f;
        int e = 0;
        while (e < 5 && tile_scale * std::ldexp(1.0f, -(e + 1)) >= scale) ++e;
        scale = tile_scale * std::ldexp(1.0f, -e);
      }
      xs[c * n_scales + s] = scale;
      for (int k = 0; k < span; ++k) {
        const int i = c * kTileK + s * span + k;
        xq[i] = static_cast<int8_t>(std::lround(std::clamp(x[i] / scale, -127.0f, 127.0f)));
      }
    }
  DeviceBuffer<uint8_t> dq(q.size());
  DeviceBuffer<int8_t> dx(xq.size());
  DeviceBuffer<float> ddsc(dsc.size()), dxs(xs.size()), dy(static_cast<size_t>(kRows * kCols));
  CHORUS_CUDA_CHECK(cudaMemcpy(dq.get(), q.data(), q.size(), cudaMemcpyHostToDevice));
  CHORUS_CUDA_CHECK(cudaMemcpy(dx.get(), xq.data(), xq.size(), cudaMemcpyHostToDevice));
  CHORUS_CUDA_CHECK(cudaMemcpy(ddsc.get(), dsc.data(), dsc.size() * 4, cudaMemcpyHostToDevice));
  CHORUS_CUDA_CHECK(cudaMemcpy(dxs.get(), xs.data(), xs.size() * 4, cudaMemcpyHostToDevice));
  bits_kernel<<<1, 32>>>(dq.get(), dx.get(), ddsc.get(), dxs.get(), n_scales, dy.get());
  CHORUS_CUDA_CHECK(cudaGetLastError());
  std::vector<float> y(static_cast<size_t>(kRows * kCols));
  CHORUS_CUDA_CHECK(cudaMemcpy(y.data(), dy.get(), y.size() * 4, cudaMemcpyDeviceToHost));
  BitsResult res;
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) {
      double rounded = 0, exact = 0, mag = 0;
      for (int k = 0; k < kTileK; ++k) {
        const double w = static_cast<double>(dsc[r * kSub + k / 32]) * q[r * kTileK + k];
        const int i = c * kTileK + k;
        rounded += w * xq[i] * xs[c * n_scales + k / span];
        exact += w * x[i];
        mag += std::fabs(w * x[i]);
      }
      res.route_err = std::max(res.route_err, std::fabs(y[r * kCols + c] - rounded) / mag);
      res.rounding_err = std::max(res.rounding_err, std::fabs(rounded - exact) / mag);
    }
  return res;
}

// ---- 2. rate ----
constexpr int kWarps = 4, kBlocksPerSm = 4;
constexpr int kRec = 144, kWarpTile = kRows * kRec;
constexpr int kXF16Bytes = kCols * chorus::cuda::kGemvXTileBytes;  // today's x tile, 8 rows
constexpr int kXI8Bytes = 32 * 64;                                  // int8 x in fragment order
constexpr int kXsBytes = 4 * 64;                                    // per-32 scales, per t
constexpr int kSmem = kXF16Bytes + kXI8Bytes + kXsBytes + 128 + kWarps * 2 * kWarpTile;

// kIntPow2: a scale per 32 restricted to the tile's scale times 2^-e (e in 0..5), so that the
// sub-block products add up as integers (D << e) and the float work is once per tile.
enum Mode { kToday = 0, kInt32 = 1, kInt256 = 2, kIntPow2 = 3 };

// The integer tile of one column group: lane (g, t)'s records are rows g and g + 8 (144 bytes:
// the head of d, dmin and the 12 bytes of 6-bit scales and mins, then 128 bytes of nibbles in
// the order the route would repack them to: words 2i and 2i + 1 of part t hold k-step i's a0 and
// a2 bytes in their low nibbles and k-step 4 + i's in their high ones).
// A record head's 8 sub-block scales as bytes: sc_0..3 = bytes 0-3 of the 6-bit scales & 63,
// sc_4..7 = low nibbles of bytes 8-11 | the top bits of bytes 0-3 (the GGUF packing).
__device__ __forceinline__ void q4k_head_scales(const uint4& h, uint32_t& lo, uint32_t& hi) {
  lo = h.y & 0x3F3F3F3Fu;
  hi = (h.w & 0x0F0F0F0Fu) | ((h.y >> 2) & 0x30303030u);
}

template <int kMode>
__device__ __forceinline__ void int_tile(const uint8_t* wt, int lane, const uint32_t* xfrag, const float* xs_t,
                                         uint4 x_exp, uint32_t b_min, float (&acc)[4]) {
  using namespace chorus::cuda;
  const int g = lane >> 2, t = lane & 3;
  const uint8_t* ra = wt + g * kRec;
  const uint8_t* rb = wt + (g + 8) * kRec;
  const uint4 ha = ld16(ra), hb = ld16(rb);
  uint32_t sa_lo, sa_hi, sb_lo, sb_hi;
  q4k_head_scales(ha, sa_lo, sa_hi);
  q4k_head_scales(hb, sb_lo, sb_hi);
  // The nibbles, d and the min term's A (-32 dmin m of the lane's sub-blocks 2t, 2t + 1, one
  // m16n8k8 as today) as today's tile loads them.
  const Q4KExactRow ma = q4k_exact_load(ra, t), mb = q4k_exact_load(rb, t);
  const uint32_t(&qa)[8] = ma.q;
  const uint32_t(&qb)[8] = mb.q;
  const float da = ma.d, db = mb.d;
  int isum[4] = {0, 0, 0, 0};
#pragma unroll
  for (int j = 0; j < kSub; ++j) {
    const int w = 2 * (j & 3);
    const int sh = j < 4 ? 0 : 4;
    const uint32_t a[4] = {(qa[w] >> sh) & 0x0F0F0F0Fu, (qb[w] >> sh) & 0x0F0F0F0Fu, (qa[w + 1] >> sh) & 0x0F0F0F0Fu,
                           (qb[w + 1] >> sh) & 0x0F0F0F0Fu};
    int d[4];
    imma_16832(d, a, xfrag[2 * j], xfrag[2 * j + 1]);
    const int sca = (((j < 4 ? sa_lo : sa_hi) >> (8 * (j & 3))) & 0xff);
    const int scb = (((j < 4 ? sb_lo : sb_hi) >> (8 * (j & 3))) & 0xff);
    if constexpr (kMode == kInt32) {
      const float ca = da * static_cast<float>(sca), cb = db * static_cast<float>(scb);
      acc[0] = fmaf(ca * xs_t[2 * j], static_cast<float>(d[0]), acc[0]);
      acc[1] = fmaf(ca * xs_t[2 * j + 1], static_cast<float>(d[1]), acc[1]);
      acc[2] = fmaf(cb * xs_t[2 * j], static_cast<float>(d[2]), acc[2]);
      acc[3] = fmaf(cb * xs_t[2 * j + 1], static_cast<float>(d[3]), acc[3]);
    } else if constexpr (kMode == kIntPow2) {
      // x_exp: byte j of (x, y) for column 2t, of (z, w) for 2t + 1.
      const uint32_t e_lo = ((j < 4 ? x_exp.x : x_exp.y) >> (8 * (j & 3))) & 7u;
      const uint32_t e_hi = ((j < 4 ? x_exp.z : x_exp.w) >> (8 * (j & 3))) & 7u;
      isum[0] += sca * (d[0] << e_lo);
      isum[1] += sca * (d[1] << e_hi);
      isum[2] += scb * (d[2] << e_lo);
      isum[3] += scb * (d[3] << e_hi);
    } else {
      isum[0] += sca * d[0];
      isum[1] += sca * d[1];
      isum[2] += scb * d[2];
      isum[3] += scb * d[3];
    }
  }
  if constexpr (kMode != kInt32) {
    acc[0] = fmaf(da * xs_t[0], static_cast<float>(isum[0]), acc[0]);
    acc[1] = fmaf(da * xs_t[1], static_cast<float>(isum[1]), acc[1]);
    acc[2] = fmaf(db * xs_t[0], static_cast<float>(isum[2]), acc[2]);
    acc[3] = fmaf(db * xs_t[1], static_cast<float>(isum[3]), acc[3]);
  }
  mma_1688(acc, ma.neg_min, mb.neg_min, b_min);
}

// The 2^-e tile at kNT column groups: the nibbles unpacked once a k-step for every group; each
// group's int8 x fragments come from shared memory in the loop ([group][k-step pair][lane],
// 16 bytes each: conflict-free), its columns' shifts (a nibble a k-step) and tile scales from
// meta[group][t] = {shifts of column 2t, of 2t + 1, scale of 2t, of 2t + 1}, its min term's B
// fragment from bmin[group][lane].
template <int kNT>
__device__ __forceinline__ void int_tile_pow2(const uint8_t* wt, int lane, uint32_t xi8_lane, const uint32_t* meta,
                                              const uint32_t* bmin, float (&acc)[kNT][4]) {
  using namespace chorus::cuda;
  const int g = lane >> 2, t = lane & 3;
  const uint8_t* ra = wt + g * kRec;
  const uint8_t* rb = wt + (g + 8) * kRec;
  const uint4 ha = ld16(ra), hb = ld16(rb);
  uint32_t sa_lo, sa_hi, sb_lo, sb_hi;
  q4k_head_scales(ha, sa_lo, sa_hi);
  q4k_head_scales(hb, sb_lo, sb_hi);
  const Q4KExactRow ma = q4k_exact_load(ra, t), mb = q4k_exact_load(rb, t);
  uint4 m[kNT];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) m[nt] = ld_shared_v4(smem_u32(meta + (nt * 4 + t) * 4));
  int isum[kNT][4];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) isum[nt][0] = isum[nt][1] = isum[nt][2] = isum[nt][3] = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    uint4 xb[kNT];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) xb[nt] = ld_shared_v4(xi8_lane + ((nt * 4 + i) * 32) * 16);
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // k-step j = 2i + h: sub-block j, the low (h 0) or high nibbles
      const int j = 2 * i + h, sh = 4 * h;
      const uint32_t a[4] = {(ma.q[2 * i] >> sh) & 0x0F0F0F0Fu, (mb.q[2 * i] >> sh) & 0x0F0F0F0Fu,
                             (ma.q[2 * i + 1] >> sh) & 0x0F0F0F0Fu, (mb.q[2 * i + 1] >> sh) & 0x0F0F0F0Fu};
      const int sca = ((j < 4 ? sa_lo : sa_hi) >> (8 * (j & 3))) & 0xff;
      const int scb = ((j < 4 ? sb_lo : sb_hi) >> (8 * (j & 3))) & 0xff;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        int d[4];
        imma_16832(d, a, h == 0 ? xb[nt].x : xb[nt].z, h == 0 ? xb[nt].y : xb[nt].w);
        const uint32_t e_lo = (m[nt].x >> (4 * j)) & 7u, e_hi = (m[nt].y >> (4 * j)) & 7u;
        isum[nt][0] += sca * (d[0] << e_lo);
        isum[nt][1] += sca * (d[1] << e_hi);
        isum[nt][2] += scb * (d[2] << e_lo);
        isum[nt][3] += scb * (d[3] << e_hi);
      }
    }
  }
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const float xs_lo = __uint_as_float(m[nt].z), xs_hi = __uint_as_float(m[nt].w);
    acc[nt][0] = fmaf(ma.d * xs_lo, static_cast<float>(isum[nt][0]), acc[nt][0]);
    acc[nt][1] = fmaf(ma.d * xs_hi, static_cast<float>(isum[nt][1]), acc[nt][1]);
    acc[nt][2] = fmaf(mb.d * xs_lo, static_cast<float>(isum[nt][2]), acc[nt][2]);
    acc[nt][3] = fmaf(mb.d * xs_hi, static_cast<float>(isum[nt][3]), acc[nt][3]);
    mma_1688(acc[nt], ma.neg_min, mb.neg_min, bmin[nt * 32 + lane]);
  }
}

// Rates at kNT column groups, in the GEMV's launch shape for them (gemv_kernel.cuh GemvShape:
// 8 warps a block and 2 blocks a multiprocessor past 8 rows): today's tile or the 2^-e tile.
template <int kNT>
struct GroupShape {
  static constexpr int kWarpsG = kNT == 1 ? 4 : 8, kBlocks = kNT == 1 ? 4 : 2;
  static constexpr int kXF16 = 8 * kNT * chorus::cuda::kGemvXTileBytes, kXI8 = kNT * 2048, kMeta = kNT * 64,
                       kBmin = kNT * 128;
  static constexpr int kSmemG = kXF16 + kXI8 + kMeta + kBmin + kWarpsG * 2 * kWarpTile;
};

template <bool kInt, int kNT>
__global__ void __launch_bounds__(GroupShape<kNT>::kWarpsG * 32, GroupShape<kNT>::kBlocks)
    group_rate_kernel(int tiles, RateOut* out) {
  using namespace chorus::cuda;
  using G = GroupShape<kNT>;
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t* xf16 = smem;
  uint8_t* xi8 = smem + G::kXF16;
  uint32_t* meta = reinterpret_cast<uint32_t*>(xi8 + G::kXI8);
  uint32_t* bmin = meta + G::kMeta / 4;
  uint8_t* ws = reinterpret_cast<uint8_t*>(bmin + G::kBmin / 4);
  for (int i = threadIdx.x; i < G::kSmemG / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3C003C00u ^ (i * 2654435761u & 0x03FF03FFu);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t x_lane = smem_u32(xf16) + x_lane_offset<kNT>(8 * kNT, lane);
  const uint32_t xi8_lane = smem_u32(xi8) + lane * 16;
  float acc[kNT][4];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
  const uint64_t t0 = global_ns();
#pragma unroll 1
  for (int tile = 0; tile < tiles; ++tile) {
    const uint8_t* wt = ws + (warp * 2 + (tile & 1)) * kWarpTile;
    if constexpr (kInt) {
      int_tile_pow2<kNT>(wt, lane, xi8_lane, meta, bmin, acc);
    } else {
      warp_tile_q4k_exact<kNT>(wt, x_lane, lane, acc, bmin, nullptr, 0);
    }
  }
  __syncthreads();
  const uint64_t t1 = global_ns();
  float s = 0.0f;
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) s += acc[nt][0] + acc[nt][1] + acc[nt][2] + acc[nt][3];
  if (threadIdx.x == 0) {
    out[blockIdx.x].ns = t1 - t0;
    out[blockIdx.x].sink = s;
  }
}

template <int kMode>
__global__ void __launch_bounds__(kWarps * 32, kBlocksPerSm) rate_kernel(int tiles, RateOut* out) {
  using namespace chorus::cuda;
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t* xf16 = smem;
  uint32_t* xi8 = reinterpret_cast<uint32_t*>(smem + kXF16Bytes);
  float* xs = reinterpret_cast<float*>(smem + kXF16Bytes + kXI8Bytes);
  uint32_t* bmin = reinterpret_cast<uint32_t*>(smem + kXF16Bytes + kXI8Bytes + kXsBytes);
  uint8_t* ws = smem + kXF16Bytes + kXI8Bytes + kXsBytes + 128;
  // Halves near 1..2 and small scales: finite values of the same instruction stream as real data.
  for (int i = threadIdx.x; i < kSmem / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3C003C00u ^ (i * 2654435761u & 0x03FF03FFu);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t x_lane = smem_u32(xf16) + x_lane_offset<1>(kCols, lane);
  float acc[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
  const uint64_t t0 = global_ns();
#pragma unroll 1
  for (int tile = 0; tile < tiles; ++tile) {
    const uint8_t* wt = ws + (warp * 2 + (tile & 1)) * kWarpTile;
    if constexpr (kMode == kToday) {
      warp_tile_q4k_exact<1>(wt, x_lane, lane, acc, nullptr, nullptr, 0);
    } else {
      // The lane's B fragments of the tile's 8 k-steps (64 bytes) and its columns' scales.
      uint32_t xfrag[16];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint4 v = ld_shared_v4(smem_u32(xi8 + lane * 16 + 4 * i));
        xfrag[4 * i] = v.x; xfrag[4 * i + 1] = v.y; xfrag[4 * i + 2] = v.z; xfrag[4 * i + 3] = v.w;
      }
      float xs_t[16];
      const int n_xs = kMode == kInt32 ? 16 : 4;  // per 256 / pow2: the tile's scale of 2t, 2t + 1
#pragma unroll
      for (int i = 0; i < n_xs / 4; ++i) {
        const uint4 v = ld_shared_v4(smem_u32(xs + (lane & 3) * 16 + 4 * i));
        xs_t[4 * i] = __uint_as_float(v.x); xs_t[4 * i + 1] = __uint_as_float(v.y);
        xs_t[4 * i + 2] = __uint_as_float(v.z); xs_t[4 * i + 3] = __uint_as_float(v.w);
      }
      const uint4 x_exp = kMode == kIntPow2 ? ld_shared_v4(smem_u32(xs + (lane & 3) * 4)) : make_uint4(0, 0, 0, 0);
      int_tile<kMode>(wt, lane, xfrag, xs_t, x_exp, bmin[lane], acc[0]);
    }
  }
  __syncthreads();
  const uint64_t t1 = global_ns();
  const float s = acc[0][0] + acc[0][1] + acc[0][2] + acc[0][3];
  if (threadIdx.x == 0) {
    out[blockIdx.x].ns = t1 - t0;
    out[blockIdx.x].sink = s;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int tiles = argc > 1 ? std::atoi(argv[1]) : 256;
  std::mt19937 rng(28);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> qd(0, 15), scd(0, 63);
  std::vector<uint8_t> q(kRows * kTileK);
  std::vector<float> dsc(kRows * kSub), x(kCols * kTileK);
  for (auto& v : q) v = static_cast<uint8_t>(qd(rng));
  for (int r = 0; r < kRows; ++r) {
    const float d = 0.001f * (1.0f + std::fabs(normal(rng)));
    for (int j = 0; j < kSub; ++j) dsc[r * kSub + j] = d * static_cast<float>(scd(rng));
  }
  for (auto& v : x) v = normal(rng);
  for (int c = 0; c < kCols; ++c) x[c * kTileK + 7 * c] *= 20.0f;  // one outlier a column, as in real activations
  bool ok = true;
  for (int span : {32, 256, -32}) {
    const BitsResult r = bits_case(q, dsc, x, std::abs(span), span < 0);
    const bool pass = r.route_err < 1e-5;
    ok = ok && pass;
    std::printf("bits int8 x per %3d%s: route vs CPU on the same rounded operands %.2e of sum|w x| (%s); "
                "int8 rounding moves the result %.2e of sum|w x|\n",
                std::abs(span), span < 0 ? " (2^-e)" : "", r.route_err, pass ? "ok" : "WRONG", r.rounding_err);
  }
  if (!ok) {
    std::printf("the integer route's results are wrong (fragment layout): no rates\n");
    return 4;
  }
  int n_sms = 0;
  CHORUS_CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, 0));
  const int blocks = kBlocksPerSm * n_sms;
  DeviceBuffer<RateOut> out(static_cast<size_t>(blocks));
  auto rate = [&](auto kernel, const char* name) {
    const auto r = chorus::cuda::probe::tile_rate(kernel, kWarps, kBlocksPerSm, kSmem, tiles, out);
    std::printf("rate 8 rows: %-44s %7.1f ns per warp-tile a multiprocessor (%d blocks resident a multiprocessor, "
                "%d tiles a warp, %.1f GB/s of Q4_K a multiprocessor)\n",
                name, r.ns_per_warp_tile, r.resident_per_sm, tiles, kWarpTile / r.ns_per_warp_tile);
  };
  rate(rate_kernel<kToday>, "today's tile (warp_tile_q4k_exact<1>)");
  rate(rate_kernel<kInt32>, "int8 x, a scale per 32 (m16n8k32)");
  rate(rate_kernel<kInt256>, "int8 x, a scale per 256 (m16n8k32, IMAD)");
  rate(rate_kernel<kIntPow2>, "int8 x, a 2^-e scale per 32 (m16n8k32, SHF+IMAD)");
  // Both routes at 1, 2 and 4 column groups in the GEMV's shape for each.
  auto group_rate = [&](auto kernel, int n_warps, int blocks_per_sm, int smem, int rows, const char* name) {
    const auto r = chorus::cuda::probe::tile_rate(kernel, n_warps, blocks_per_sm, smem, tiles, out);
    std::printf("rate %2d rows: %-42s %7.1f ns per warp-tile a multiprocessor (%d blocks of %d warps resident a "
                "multiprocessor, %.1f GB/s of Q4_K a multiprocessor)\n",
                rows, name, r.ns_per_warp_tile, r.resident_per_sm, n_warps, kWarpTile / r.ns_per_warp_tile);
  };
  // (out holds kBlocksPerSm = 4 blocks a multiprocessor, the most any of these launches.)
  // At one column group today's tile is the first rate line above (the same loop in the same
  // launch shape), so it is not timed again.
  auto both = [&](auto column_groups) {
    constexpr int kNT = decltype(column_groups)::value;
    using G = GroupShape<kNT>;
    if constexpr (kNT > 1) {
      group_rate(group_rate_kernel<false, kNT>, G::kWarpsG, G::kBlocks, G::kSmemG, 8 * kNT, "today's tile");
    }
    group_rate(group_rate_kernel<true, kNT>, G::kWarpsG, G::kBlocks, G::kSmemG, 8 * kNT,
               "int8 x, 2^-e per 32, x loaded in the loop");
  };
  both(std::integral_constant<int, 1>{});
  both(std::integral_constant<int, 2>{});
  both(std::integral_constant<int, 4>{});
  return 0;
}
