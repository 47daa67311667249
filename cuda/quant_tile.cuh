#pragma once
// Device-side dequantization of one 256-element tile record (layouts in weight_repack.h)
// into registers. Thread part t (0..3) of a row produces the 64 elements [64t, 64t+64) of the
// tile as 32 half2 in natural order: w[i] = (elem 64t+2i, elem 64t+2i+1).
//
// Two interfaces: TileDequant<T>::run gives all 32 half2 of a part at once (prefill's f16
// dequantization, embedding rows); PartLoader<T> loads a part's raw bits into registers once
// and then yields it in 8 chunks of 4 half2 (w[4c..4c+4)), which is what the GEMV feeds to
// two mma k-steps at a time. For Q4_K and Q6_K the chunks come straight from the bits (fewer
// registers, fewer instructions); other types dequantize the whole part up front.
//
// Nibbles become halves with the 0x6400 trick: (0x6400 | q) read as a half is 1024 + q
// exactly for q < 1024; subtracting the bias is exact, and the single rounding happens when
// the scale is applied (half precision, relative error <= 2^-11 per weight).
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "engine/quant/tensor_type.h"

namespace chorus::cuda {

__device__ __forceinline__ __half2 u32_as_h2(uint32_t u) {
  __half2 h;
  memcpy(&h, &u, 4);
  return h;
}

__device__ __forceinline__ uint32_t h2_as_u32(__half2 h) {
  uint32_t u;
  memcpy(&u, &h, 4);
  return u;
}

__device__ __forceinline__ __half2 h2_splat_bits(uint16_t bits) {
  __half h;
  memcpy(&h, &bits, 2);
  return __half2half2(h);
}

__device__ __forceinline__ uint4 ld16(const uint8_t* p) { return *reinterpret_cast<const uint4*>(p); }
__device__ __forceinline__ uint32_t ld4(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// The 4 bytes b0..b3 of v as nibble pairs: [0] = (lo b0, lo b1), [1] = (lo b2, lo b3),
// [2] = (hi b0, hi b1), [3] = (hi b2, hi b3), each in bits 0-3 / 16-19 (no 0x6400 yet).
__device__ __forceinline__ void nibble_pairs(uint32_t v, uint32_t (&o)[4]) {
  const uint32_t v2 = __byte_perm(v, 0, 0x3120);  // bytes [b0, b2, b1, b3]
  o[0] = v2 & 0x000F000Fu;
  o[1] = (v2 >> 8) & 0x000F000Fu;
  o[2] = (v2 >> 4) & 0x000F000Fu;
  o[3] = (v2 >> 12) & 0x000F000Fu;
}

// Bit pairs (bits 0-1 of each byte of v) placed at bits 4-5 / 20-21: [0] for (b0, b1), [1] for (b2, b3).
__device__ __forceinline__ void high_bits2(uint32_t v, uint32_t (&o)[2]) {
  const uint32_t v2 = __byte_perm(v & 0x03030303u, 0, 0x3120);
  o[0] = (v2 & 0x00030003u) << 4;
  o[1] = ((v2 >> 8) & 0x00030003u) << 4;
}

// lop3 with an immediate truth table: 0xEA = (a & b) | c, 0xF8 = a | (b & c).
template <uint32_t kLut>
__device__ __forceinline__ uint32_t lop3(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, %4;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
  return d;
}

__device__ __forceinline__ float h_bits_to_f32(uint16_t bits) {
  __half h;
  memcpy(&h, &bits, 2);
  return __half2float(h);
}

template <TensorType kType>
struct TileDequant;

template <>
struct TileDequant<TensorType::F32> {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
    const float2* f = reinterpret_cast<const float2*>(rec + 256 * t);
#pragma unroll
    for (int i = 0; i < 32; ++i) w[i] = __float22half2_rn(f[i]);
  }
};

template <>
struct TileDequant<TensorType::F16> {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint4 u = ld16(rec + 128 * t + 16 * j);
      w[4 * j] = u32_as_h2(u.x); w[4 * j + 1] = u32_as_h2(u.y);
      w[4 * j + 2] = u32_as_h2(u.z); w[4 * j + 3] = u32_as_h2(u.w);
    }
  }
};

template <>
struct TileDequant<TensorType::BF16> {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint4 u = ld16(rec + 128 * t + 16 * j);
      const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float lo = __uint_as_float(words[k] << 16), hi = __uint_as_float(words[k] & 0xffff0000u);
        w[4 * j + k] = __floats2half2_rn(lo, hi);
      }
    }
  }
};

// 32-element block types: thread t owns blocks 2t and 2t+1 of the tile.
template <>
struct TileDequant<TensorType::Q4_0> {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
    const uint32_t dd = ld4(rec + 128 + 4 * t);
#pragma unroll
    for (int bi = 0; bi < 2; ++bi) {
      const __half2 d2 = h2_splat_bits(static_cast<uint16_t>(dd >> (16 * bi)));
      const __half2 bias = h2_splat_bits(0x6408);  // 1032 = 1024 + 8
      const uint4 u = ld16(rec + 16 * (2 * t + bi));
      const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int wd = 0; wd < 4; ++wd) {
        uint32_t p[4];
        nibble_pairs(words[wd], p);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const __half2 q = __hsub2(u32_as_h2(p[k] | 0x64006400u), bias);
          w[16 * bi + 8 * (k >> 1) + 2 * wd + (k & 1)] = __hmul2(q, d2);
        }
      }
    }
  }
};

template <>
struct TileDequant<TensorType::Q4_1> {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
    const uint32_t dd = ld4(rec + 128 + 4 * t), mm = ld4(rec + 144 + 4 * t);
#pragma unroll
    for (int bi = 0; bi < 2; ++bi) {
      const __half2 d2 = h2_splat_bits(static_cast<uint16_t>(dd >> (16 * bi)));
      const __half2 m2 = h2_splat_bits(static_cast<uint16_t>(mm >> (16 * bi)));
      const __half2 bias = h2_splat_bits(0x6400);
      const uint4 u = ld16(rec + 16 * (2 * t + bi));
      const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int wd = 0; wd < 4; ++wd) {
        uint32_t p[4];
        nibble_pairs(words[wd], p);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const __half2 q = __hsub2(u32_as_h2(p[k] | 0x64006400u), bias);
          w[16 * bi + 8 * (k >> 1) + 2 * wd + (k & 1)] = __hfma2(q, d2, m2);
        }
      }
    }
  }
};

// Q5_0 / Q5_1: the fifth bit of element j of a block is bit j of its 32-bit qh.
template <bool kHasMin>
struct TileDequantQ5 {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
    const uint32_t dd = ld4(rec + 160 + 4 * t);
    const uint32_t mm = kHasMin ? ld4(rec + 176 + 4 * t) : 0u;
#pragma unroll
    for (int bi = 0; bi < 2; ++bi) {
      const __half2 d2 = h2_splat_bits(static_cast<uint16_t>(dd >> (16 * bi)));
      const __half2 m2 = h2_splat_bits(static_cast<uint16_t>(mm >> (16 * bi)));
      const __half2 bias = h2_splat_bits(kHasMin ? 0x6400 : 0x6410);  // 1024 or 1040 = 1024 + 16
      const uint32_t qh = ld4(rec + 128 + 4 * (2 * t + bi));
      const uint4 u = ld16(rec + 16 * (2 * t + bi));
      const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int wd = 0; wd < 4; ++wd) {
        uint32_t p[4];
        nibble_pairs(words[wd], p);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int j = 16 * (k >> 1) + 4 * wd + 2 * (k & 1);  // first element of the pair
          const uint32_t hb = (((qh >> j) & 1u) << 4) | (((qh >> (j + 1)) & 1u) << 20);
          const __half2 q = __hsub2(u32_as_h2(p[k] | hb | 0x64006400u), bias);
          w[16 * bi + 8 * (k >> 1) + 2 * wd + (k & 1)] = kHasMin ? __hfma2(q, d2, m2) : __hmul2(q, d2);
        }
      }
    }
  }
};
template <> struct TileDequant<TensorType::Q5_0> : TileDequantQ5<false> {};
template <> struct TileDequant<TensorType::Q5_1> : TileDequantQ5<true> {};

template <>
struct TileDequant<TensorType::Q8_0> {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
    const uint32_t dd = ld4(rec + 256 + 4 * t);
    const __half2 bias = h2_splat_bits(0x6480);  // 1152 = 1024 + 128
#pragma unroll
    for (int bi = 0; bi < 2; ++bi) {
      const __half2 d2 = h2_splat_bits(static_cast<uint16_t>(dd >> (16 * bi)));
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const uint4 u = ld16(rec + 32 * (2 * t + bi) + 16 * half);
        const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int wd = 0; wd < 4; ++wd) {
          const uint32_t v = words[wd] ^ 0x80808080u;  // signed -> offset binary
          const __half2 q0 = __hsub2(u32_as_h2(__byte_perm(v, 0x64646464u, 0x5140)), bias);
          const __half2 q1 = __hsub2(u32_as_h2(__byte_perm(v, 0x64646464u, 0x4342)), bias);
          w[16 * bi + 8 * half + 2 * wd] = __hmul2(q0, d2);
          w[16 * bi + 8 * half + 2 * wd + 1] = __hmul2(q1, d2);
        }
      }
    }
  }
};

// K-quants: byte i (0..11) of the packed scales held in three words, without a local array.
__device__ __forceinline__ int k_scale_byte(uint32_t s0, uint32_t s1, uint32_t s2, int i) {
  const uint32_t word = i < 4 ? s0 : (i < 8 ? s1 : s2);
  return static_cast<int>((word >> (8 * (i & 3))) & 0xffu);
}

// The 6-bit scale and min of sub-block j (0..7), as ggml packs them.
__device__ __forceinline__ void k_scale_min(int j, uint32_t s0, uint32_t s1, uint32_t s2, int& sc, int& m) {
  if (j < 4) {
    sc = k_scale_byte(s0, s1, s2, j) & 63;
    m = k_scale_byte(s0, s1, s2, j + 4) & 63;
  } else {
    sc = (k_scale_byte(s0, s1, s2, j + 4) & 0xF) | ((k_scale_byte(s0, s1, s2, j - 4) >> 6) << 4);
    m = (k_scale_byte(s0, s1, s2, j + 4) >> 4) | ((k_scale_byte(s0, s1, s2, j) >> 6) << 4);
  }
}

// Scale d*sc and negated min -dmin*m of K-quant sub-block j as half2 splats, from the record's
// first 16 bytes (d, dmin, scales[12]); each rounded to f16 once.
__device__ __forceinline__ void k_scale_min_h2(const uint4& head, int j, __half2& scale, __half2& neg_min) {
  const float d = h_bits_to_f32(static_cast<uint16_t>(head.x & 0xffff));
  const float dmin = h_bits_to_f32(static_cast<uint16_t>(head.x >> 16));
  int sc, m;
  k_scale_min(j, head.y, head.z, head.w, sc, m);
  scale = __float2half2_rn(d * static_cast<float>(sc));
  neg_min = __float2half2_rn(-dmin * static_cast<float>(m));
}

// Q5_K: thread t owns the 64-element chunk t: sub-block 2t from the low nibbles of
// qs[32t..32t+32), sub-block 2t+1 from the high nibbles; the fifth bits are bits 2t / 2t+1 of
// qh[0..32).
template <>
struct TileDequant<TensorType::Q5_K> {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
    const uint4 head = ld16(rec);
    __half2 scale2[2], min2[2];
#pragma unroll
    for (int s = 0; s < 2; ++s) k_scale_min_h2(head, 2 * t + s, scale2[s], min2[s]);
    uint32_t qs[8], qh[8];
    {
      const uint4 a = ld16(rec + 48 + 32 * t), b = ld16(rec + 48 + 32 * t + 16);
      qs[0] = a.x; qs[1] = a.y; qs[2] = a.z; qs[3] = a.w; qs[4] = b.x; qs[5] = b.y; qs[6] = b.z; qs[7] = b.w;
      const uint4 c = ld16(rec + 16), e = ld16(rec + 32);
      qh[0] = c.x; qh[1] = c.y; qh[2] = c.z; qh[3] = c.w; qh[4] = e.x; qh[5] = e.y; qh[6] = e.z; qh[7] = e.w;
    }
    const __half2 bias = h2_splat_bits(0x6400);
#pragma unroll
    for (int wd = 0; wd < 8; ++wd) {
      uint32_t p[4], lo[2], hi[2];
      nibble_pairs(qs[wd], p);
      high_bits2((qh[wd] >> (2 * t)) & 0x01010101u, lo);
      high_bits2((qh[wd] >> (2 * t + 1)) & 0x01010101u, hi);
      const uint32_t h5[4] = {lo[0], lo[1], hi[0], hi[1]};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int s = k >> 1;  // 0: low nibbles (sub-block 2t), 1: high (2t+1)
        const __half2 q = __hsub2(u32_as_h2(p[k] | h5[k] | 0x64006400u), bias);
        w[16 * s + 2 * wd + (k & 1)] = __hfma2(q, scale2[s], min2[s]);
      }
    }
  }
};

// Q4_K part t's 24-bit field of scales and mins (weight_repack.h: q4k_part_field), from the
// record's first 16 bytes: byte t of the words y, z, w. Two byte permutes; the selectors depend
// on t only, so a kernel computes them once.
__device__ __forceinline__ uint32_t q4k_field(const uint4& head, int t) {
  const uint32_t yz = __byte_perm(head.y, head.z, static_cast<uint32_t>(t | ((t + 4) << 4)));
  return __byte_perm(yz, head.w, static_cast<uint32_t>(0x10 | ((t + 4) << 8)));
}

// Q4_K part t: sub-block 2t in the low nibbles of the part's 32 qs bytes, 2t+1 in the high
// ones; with bytes 1 and 2 of each word swapped at repack, word wd yields w[2wd] and w[2wd+1]
// (low nibbles, masks 0x000F000F on v and v >> 8) and w[16+2wd], w[17+2wd] (high nibbles, mask
// 0x00F000F0, i.e. 16 q + 1024, scaled back exactly by 1/16 - 64).
struct PartQ4K {
  struct Row {
    uint32_t q[8];
    __half2 s_lo, m_lo, s_hi, m_hi;
  };
  __device__ __forceinline__ static Row load(const uint8_t* rec, int t) {
    Row r;
    const uint4 head = ld16(rec);
    const uint32_t f = q4k_field(head, t);
    const float d = h_bits_to_f32(static_cast<uint16_t>(head.x & 0xffff));
    const float dmin = h_bits_to_f32(static_cast<uint16_t>(head.x >> 16));
    r.s_lo = __float2half2_rn(d * static_cast<float>(f & 63u));
    r.s_hi = __float2half2_rn(d * static_cast<float>((f >> 6) & 63u));
    r.m_lo = __float2half2_rn(-dmin * static_cast<float>((f >> 12) & 63u));
    r.m_hi = __float2half2_rn(-dmin * static_cast<float>((f >> 18) & 63u));
    const uint4 a = ld16(rec + 16 + 32 * t), b = ld16(rec + 32 + 32 * t);
    r.q[0] = a.x; r.q[1] = a.y; r.q[2] = a.z; r.q[3] = a.w; r.q[4] = b.x; r.q[5] = b.y; r.q[6] = b.z; r.q[7] = b.w;
    return r;
  }
  // w = w[4c .. 4c+4); c must be a compile-time constant after unrolling.
  __device__ __forceinline__ static void chunk(const Row& r, int c, __half2 (&w)[4]) {
    const __half2 k1024 = h2_splat_bits(0x6400), k1_16 = h2_splat_bits(0x2C00), km64 = h2_splat_bits(0xD400);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const uint32_t v = r.q[2 * (c & 3) + j];
      if (c < 4) {
        const __half2 a = u32_as_h2(lop3<0xEA>(v, 0x000F000Fu, 0x64006400u));
        const __half2 b = u32_as_h2(lop3<0xEA>(v >> 8, 0x000F000Fu, 0x64006400u));
        w[2 * j] = __hfma2(__hsub2(a, k1024), r.s_lo, r.m_lo);
        w[2 * j + 1] = __hfma2(__hsub2(b, k1024), r.s_lo, r.m_lo);
      } else {
        const __half2 a = u32_as_h2(lop3<0xEA>(v, 0x00F000F0u, 0x64006400u));
        const __half2 b = u32_as_h2(lop3<0xEA>(v >> 8, 0x00F000F0u, 0x64006400u));
        w[2 * j] = __hfma2(__hfma2(a, k1_16, km64), r.s_hi, r.m_hi);
        w[2 * j + 1] = __hfma2(__hfma2(b, k1_16, km64), r.s_hi, r.m_hi);
      }
    }
  }
};

// Q6_K part t (record of weight_repack.h: q6k_nibble_bit): words 6g..6g+5 of the part hold
// w[16g..16g+16). Chunks 4g..4g+2 are whole quants, A at bits 0-5 / 16-21 (one mask) and B at
// 6-11 / 22-27 (a shift by 6, one mask): w[4c+j] is A of word 6g + 2(c%4) + j/2 if j is even,
// B if odd. Chunk 4g+3 assembles w[16g+12..16g+16) from the spare bits 12-15 of the six words:
// nibbles of words 0-3, bit pairs of words 4 and 5. Its odd entries are assembled 2 bits up
// (bits 2-7: 1024 + 4q, scaled back exactly by 1/4), so one shift of word 4 or 5 serves two
// entries. Every entry is (q - 32) exactly before the one rounding, the scale's multiply.
// Sub-block (16 elements, one int8 scale) of w[i] is 4t + i/8.
struct PartQ6K {
  struct Row {
    uint32_t v[12];
    __half2 s[4];
  };
  __device__ __forceinline__ static Row load(const uint8_t* rec, int t) {
    Row r;
    const uint4 a = ld16(rec + 48 * t), b = ld16(rec + 48 * t + 16), c = ld16(rec + 48 * t + 32);
    r.v[0] = a.x; r.v[1] = a.y; r.v[2] = a.z; r.v[3] = a.w; r.v[4] = b.x; r.v[5] = b.y;
    r.v[6] = b.z; r.v[7] = b.w; r.v[8] = c.x; r.v[9] = c.y; r.v[10] = c.z; r.v[11] = c.w;
    const float d = h_bits_to_f32(*reinterpret_cast<const uint16_t*>(rec + 208));
    const uint32_t sc4 = ld4(rec + 192 + 4 * t);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int sc = static_cast<int8_t>(static_cast<uint8_t>(sc4 >> (8 * j)));
      r.s[j] = __float2half2_rn(d * static_cast<float>(sc));
    }
    return r;
  }
  // w = w[4c .. 4c+4); c must be a compile-time constant after unrolling.
  __device__ __forceinline__ static void chunk(const Row& r, int c, __half2 (&w)[4]) {
    const __half2 bias = h2_splat_bits(0x6420);                                     // 1056 = 1024 + 32
    const __half2 k1_4 = h2_splat_bits(0x3400), km288 = h2_splat_bits(0xDC80);      // 1/4, -(256 + 32)
    const uint32_t* v = r.v + 6 * (c / 4);
    const __half2 scale = r.s[c >> 1];
    if (c % 4 < 3) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t x = v[2 * (c % 4) + j / 2];
        const uint32_t q = lop3<0xEA>(j % 2 == 0 ? x : x >> 6, 0x003F003Fu, 0x64006400u);
        w[j] = __hmul2(__hsub2(u32_as_h2(q), bias), scale);
      }
    } else {
      const uint32_t hi4 = v[4] >> 8, hi5 = v[5] >> 8;  // pairs of bits 12-15 at 4-7 / 20-23
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t hi = j < 2 ? hi4 : hi5;
        if (j % 2 == 0) {
          const uint32_t lo = lop3<0xEA>(v[j] >> 12, 0x000F000Fu, 0x64006400u);
          w[j] = __hmul2(__hsub2(u32_as_h2(lop3<0xF8>(lo, hi, 0x00300030u)), bias), scale);
        } else {
          const uint32_t lo = lop3<0xEA>(v[j] >> 10, 0x003C003Cu, 0x64006400u);
          const __half2 q = u32_as_h2(lop3<0xF8>(lo, hi, 0x00C000C0u));
          w[j] = __hmul2(__hfma2(q, k1_4, km288), scale);
        }
      }
    }
  }
};

template <typename Part>
struct TileDequantFromParts {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
    const typename Part::Row r = Part::load(rec, t);
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      __half2 q[4];
      Part::chunk(r, c, q);
#pragma unroll
      for (int j = 0; j < 4; ++j) w[4 * c + j] = q[j];
    }
  }
};
template <> struct TileDequant<TensorType::Q4_K> : TileDequantFromParts<PartQ4K> {};
template <> struct TileDequant<TensorType::Q6_K> : TileDequantFromParts<PartQ6K> {};

// The GEMV's view of a part: types without a chunked decoder dequantize it whole.
template <TensorType kType>
struct PartLoader {
  struct Row {
    __half2 w[32];
  };
  __device__ __forceinline__ static Row load(const uint8_t* rec, int t) {
    Row r;
    TileDequant<kType>::run(rec, t, r.w);
    return r;
  }
  __device__ __forceinline__ static void chunk(const Row& r, int c, __half2 (&w)[4]) {
#pragma unroll
    for (int j = 0; j < 4; ++j) w[j] = r.w[4 * c + j];
  }
};
template <> struct PartLoader<TensorType::Q4_K> : PartQ4K {};
template <> struct PartLoader<TensorType::Q6_K> : PartQ6K {};

}  // namespace chorus::cuda
