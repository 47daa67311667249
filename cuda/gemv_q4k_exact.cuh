#pragma once
// One GEMV tile of Q4_K weights with integer-exact tensor-core operands.
//
// A Q4_K weight is d * sc_j * q - dmin * m_j (q 4-bit, sc_j and m_j 6-bit per 32-element
// sub-block j, d and dmin f16 per 256-element tile). The generic route (warp_tile_mma) makes
// each weight an f16 (lop3, subtract, multiply-add: ~13 instructions per 8 weights) and is
// issue-bound: at M = 32 dequantization was ~300 of ~720 instructions per warp and tile
// (perf-notes v9). Here the tile's sum is split as
//     y = d * sum_k (sc_j q_k) x_k  -  sum_j (dmin m_j) * xsum_j
// - sc_j * q is an integer <= 945, exact in f16, and one fused multiply-add makes it straight
//   from the nibble's 0x6400 bits: (1024 + q) * sc - 1024 sc (low nibbles) or
//   (1024 + 16 q) * sc / 16 - 64 sc (high ones); the exact result needs no rounding, so one
//   lop3 and one hfma2 give two weights (9 instructions per 8). The k-steps accumulate into
//   tile-local sums P, scaled by d once per tile in f32.
// - xsum_j (the sum of the activations of sub-block j, per column) comes from the tensor cores
//   too: the B fragments already loaded, read as an A fragment (x^T), times a 0/1 selector of
//   the lane's sub-block; the D fragment then holds the B fragment the min product needs, one
//   m16n8k8 per column group with A = -dmin m_j (f16) per row and sub-block.
// Numerics: the scale part is exact products summed in f32 (better than the generic route's
// f16 weights); the min part rounds dmin * m and the sub-block sums (held as means, /32, so
// that large activations cannot overflow f16) to f16 once each; the 32 goes into -32 dmin m,
// which overflows f16 only past dmin * m = 2047 (weights of that size are many orders beyond
// any real model's). Columns stay independent, so results are bit-identical for every M
// (batch invariance).
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/bulk_copy.cuh"
#include "cuda/gemv.h"
#include "cuda/mma.cuh"
#include "cuda/quant_tile.cuh"

namespace chorus::cuda {

// A row part's scale terms for the exact route (lane part t: sub-blocks 2t and 2t + 1).
struct Q4KExactRow {
  uint32_t q[8];              // the part's 32 qs bytes (weight_repack.h)
  __half2 mul_lo, bias_lo;    // splats of sc_lo and -1024 sc_lo
  __half2 mul_hi, bias_hi;    // splats of sc_hi / 16 and -64 sc_hi
  uint32_t neg_min;           // half2 (-32 dmin m_lo, -32 dmin m_hi): A of the min product
  float d;
};

__device__ __forceinline__ Q4KExactRow q4k_exact_load(const uint8_t* rec, int t) {
  Q4KExactRow r;
  const uint4 head = ld16(rec);
  const uint32_t f = q4k_field(head, t);
  const __half2 k1024 = h2_splat_bits(0x6400);
  // (sc_lo, sc_hi) and (m_lo, m_hi) as exact halves: 6-bit integers in 0x6400's mantissa.
  const __half2 sc = __hsub2(u32_as_h2((f & 0x3Fu) | ((f << 10) & 0x3F0000u) | 0x64006400u), k1024);
  const __half2 m = __hsub2(u32_as_h2(((f >> 12) & 0x3Fu) | ((f >> 2) & 0x3F0000u) | 0x64006400u), k1024);
  const __half2 mul = __hmul2(sc, u32_as_h2(0x2C003C00u));   // (sc_lo, sc_hi / 16), exact
  const __half2 bias = __hmul2(sc, u32_as_h2(0xD400E400u));  // (-1024 sc_lo, -64 sc_hi), exact
  r.mul_lo = __low2half2(mul);
  r.mul_hi = __high2half2(mul);
  r.bias_lo = __low2half2(bias);
  r.bias_hi = __high2half2(bias);
  // -32 dmin is exact (a power of two); times m (<= 63) it is rounded once, as dmin * m is on
  // the generic route. The 32 undoes the sub-block means.
  const __half2 neg_dmin32 = __hmul2(__high2half2(u32_as_h2(head.x)), h2_splat_bits(0xD000));
  r.neg_min = h2_as_u32(__hmul2(m, neg_dmin32));
  r.d = h_bits_to_f32(static_cast<uint16_t>(head.x & 0xffff));
  const uint4 a = ld16(rec + 16 + 32 * t), b = ld16(rec + 32 + 32 * t);
  r.q[0] = a.x; r.q[1] = a.y; r.q[2] = a.z; r.q[3] = a.w; r.q[4] = b.x; r.q[5] = b.y; r.q[6] = b.z; r.q[7] = b.w;
  return r;
}

// sc_j * q for the part's elements w[4c .. 4c+4) (the same positions as PartQ4K::chunk);
// c must be a compile-time constant after unrolling.
__device__ __forceinline__ void q4k_exact_chunk(const Q4KExactRow& r, int c, __half2 (&w)[4]) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const uint32_t v = r.q[2 * (c & 3) + j];
    const uint32_t mask = c < 4 ? 0x000F000Fu : 0x00F000F0u;
    const __half2 mul = c < 4 ? r.mul_lo : r.mul_hi, bias = c < 4 ? r.bias_lo : r.bias_hi;
    w[2 * j] = __hfma2(u32_as_h2(lop3<0xEA>(v, mask, 0x64006400u)), mul, bias);
    w[2 * j + 1] = __hfma2(u32_as_h2(lop3<0xEA>(v >> 8, mask, 0x64006400u)), mul, bias);
  }
}

// Selector B fragment for chunk c (k positions 2t, 2t+1 and 2t+8, 2t+9 of a k-step hold part
// t's elements, sub-block 2t for chunks 0-3 and 2t + 1 for 4-7; column j = g picks sub-block
// g), 1/32 so that the sums come out as means.
__device__ __forceinline__ uint32_t q4k_sub_block_selector(int lane, bool high) {
  const int g = lane >> 2, t = lane & 3;
  return g == 2 * t + (high ? 1 : 0) ? 0x28002800u : 0u;
}

// One chunk's step of a column group's sub-block means: its B registers read as an A fragment
// (x^T: rows g and g + 8 both hold column g, row g the k positions 2t.. of both k-steps, row
// g + 8 the positions 2t + 8..), so the 16-byte load needs no moves.
template <bool kFirst>
__device__ __forceinline__ void q4k_xsum_step(float (&xs)[4], const uint4& b, uint32_t sel) {
  const uint32_t xa[4] = {b.x, b.y, b.z, b.w};
  if constexpr (kFirst) {
    mma_16816_first(xs, xa, sel, sel);
  } else {
    mma_16816(xs, xa, sel, sel);
  }
}

// xs: rows g, g + 8 = halves of column g's sums, columns = sub-blocks 2t, 2t + 1; added, they
// are the B fragment of the min product.
__device__ __forceinline__ uint32_t q4k_xsum_fragment(const float (&xs)[4]) {
  return h2_as_u32(__floats2half2_rn(xs[0] + xs[2], xs[1] + xs[3]));
}

// The min product's B fragment of one column group of a tile, computed on its own (x_lane:
// the lane's B address of the group in the tile); the same instructions as the fused loop
// below, so the bits are the same whichever computes them.
__device__ __forceinline__ uint32_t q4k_xsum_group(uint32_t x_lane, int lane) {
  const uint32_t sel_lo = q4k_sub_block_selector(lane, false), sel_hi = q4k_sub_block_selector(lane, true);
  float xs[4];
  q4k_xsum_step<true>(xs, ld_shared_v4(x_lane), sel_lo);
#pragma unroll
  for (int c = 1; c < 8; ++c) q4k_xsum_step<false>(xs, ld_shared_v4(x_lane ^ static_cast<uint32_t>(c << 4)), c < 4 ? sel_lo : sel_hi);
  return q4k_xsum_fragment(xs);
}

// The tile of the warp's 16 rows against every activation row (same contract as
// warp_tile_mma: x_lane is lane (g, t)'s swizzled B address in this tile). One column group
// (kNT == 1) computes its sub-block sums in the loop from the B registers it loads; with more,
// the block computes them once per tile (q4k_xsum_group, gemv_kernel) and xsum_tile holds
// them: [column group][lane] fragments, complete (in the ring, gemv_kernel.cuh) once xsum_bar
// has completed the phase of this parity; null where a block barrier already ordered them.
template <int kNT>
__device__ __forceinline__ void warp_tile_q4k_exact(const uint8_t* wt, uint32_t x_lane, int lane, float (&acc)[kNT][4],
                                                    const uint32_t* xsum_tile, uint64_t* xsum_bar, uint32_t xsum_parity) {
  constexpr int kRec = record_bytes_of(TensorType::Q4_K);
  const int g = lane >> 2, t = lane & 3;
  const Q4KExactRow ra = q4k_exact_load(wt + g * kRec, t);
  const Q4KExactRow rb = q4k_exact_load(wt + (g + 8) * kRec, t);
  const uint32_t sel_lo = q4k_sub_block_selector(lane, false), sel_hi = q4k_sub_block_selector(lane, true);
  float p[kNT][4], xs[4];
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    __half2 wa[4], wb[4];
    q4k_exact_chunk(ra, c, wa);
    q4k_exact_chunk(rb, c, wb);
    const uint32_t a0[4] = {h2_as_u32(wa[0]), h2_as_u32(wb[0]), h2_as_u32(wa[1]), h2_as_u32(wb[1])};
    const uint32_t a1[4] = {h2_as_u32(wa[2]), h2_as_u32(wb[2]), h2_as_u32(wa[3]), h2_as_u32(wb[3])};
    const uint32_t xc = x_lane ^ static_cast<uint32_t>(c << 4);
    uint4 b[kNT];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) b[nt] = ld_shared_v4(xc + nt * 8 * kGemvXTileBytes);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      if (c == 0) {
        mma_16816_first(p[nt], a0, b[nt].x, b[nt].y);
      } else {
        mma_16816(p[nt], a0, b[nt].x, b[nt].y);
      }
      mma_16816(p[nt], a1, b[nt].z, b[nt].w);
    }
    if constexpr (kNT == 1) {
      if (c == 0) {
        q4k_xsum_step<true>(xs, b[0], sel_lo);
      } else {
        q4k_xsum_step<false>(xs, b[0], c < 4 ? sel_lo : sel_hi);
      }
    }
  }
  if (kNT > 1 && xsum_bar != nullptr) mbar_wait(xsum_bar, xsum_parity);  // the ring's sums of this tile
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const uint32_t b_min = kNT == 1 ? q4k_xsum_fragment(xs) : xsum_tile[nt * 32 + lane];
    acc[nt][0] = fmaf(ra.d, p[nt][0], acc[nt][0]);
    acc[nt][1] = fmaf(ra.d, p[nt][1], acc[nt][1]);
    acc[nt][2] = fmaf(rb.d, p[nt][2], acc[nt][2]);
    acc[nt][3] = fmaf(rb.d, p[nt][3], acc[nt][3]);
    mma_1688(acc[nt], ra.neg_min, rb.neg_min, b_min);
  }
}

}  // namespace chorus::cuda
