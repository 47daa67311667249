#pragma once
// Device-side dequantization of one 256-element tile record (layouts in weight_repack.h)
// into registers. Thread part t (0..3) of a row produces the 64 elements [64t, 64t+64) of the
// tile as 32 half2 in natural order: w[i] = (elem 64t+2i, elem 64t+2i+1).
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

// Q4_K / Q5_K: thread t owns the 64-element chunk t: sub-block 2t from the low nibbles of
// qs[32t..32t+32), sub-block 2t+1 from the high nibbles; Q5_K's fifth bits are bits 2t / 2t+1
// of qh[0..32).
template <bool kFiveBit>
struct TileDequantK {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
    const uint4 head = ld16(rec);
    const float d = h_bits_to_f32(static_cast<uint16_t>(head.x & 0xffff));
    const float dmin = h_bits_to_f32(static_cast<uint16_t>(head.x >> 16));
    __half2 scale2[2], min2[2];
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      int sc, m;
      k_scale_min(2 * t + s, head.y, head.z, head.w, sc, m);
      scale2[s] = __float2half2_rn(d * static_cast<float>(sc));
      min2[s] = __float2half2_rn(-dmin * static_cast<float>(m));
    }
    const int qs_off = kFiveBit ? 48 : 16;
    uint32_t qs[8], qh[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    {
      const uint4 a = ld16(rec + qs_off + 32 * t), b = ld16(rec + qs_off + 32 * t + 16);
      qs[0] = a.x; qs[1] = a.y; qs[2] = a.z; qs[3] = a.w; qs[4] = b.x; qs[5] = b.y; qs[6] = b.z; qs[7] = b.w;
    }
    if constexpr (kFiveBit) {
      const uint4 a = ld16(rec + 16), b = ld16(rec + 32);
      qh[0] = a.x; qh[1] = a.y; qh[2] = a.z; qh[3] = a.w; qh[4] = b.x; qh[5] = b.y; qh[6] = b.z; qh[7] = b.w;
    }
    const __half2 bias = h2_splat_bits(0x6400);
#pragma unroll
    for (int wd = 0; wd < 8; ++wd) {
      uint32_t p[4];
      nibble_pairs(qs[wd], p);
      uint32_t h5[4] = {0, 0, 0, 0};
      if constexpr (kFiveBit) {
        uint32_t lo[2], hi[2];
        high_bits2((qh[wd] >> (2 * t)) & 0x01010101u, lo);
        high_bits2((qh[wd] >> (2 * t + 1)) & 0x01010101u, hi);
        h5[0] = lo[0]; h5[1] = lo[1]; h5[2] = hi[0]; h5[3] = hi[1];
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int s = k >> 1;  // 0: low nibbles (sub-block 2t), 1: high (2t+1)
        const __half2 q = __hsub2(u32_as_h2(p[k] | h5[k] | 0x64006400u), bias);
        w[16 * s + 2 * wd + (k & 1)] = __hfma2(q, scale2[s], min2[s]);
      }
    }
  }
};
template <> struct TileDequant<TensorType::Q4_K> : TileDequantK<false> {};
template <> struct TileDequant<TensorType::Q5_K> : TileDequantK<true> {};

// Q6_K: thread t covers half n = t/2 of the super-block, groups g0 = 2(t&1) and g0+1 of it.
template <>
struct TileDequant<TensorType::Q6_K> {
  __device__ __forceinline__ static void run(const uint8_t* rec, int t, __half2 (&w)[32]) {
    const int n = t >> 1, odd = t & 1, g0 = 2 * odd;
    const float d = h_bits_to_f32(*reinterpret_cast<const uint16_t*>(rec + 208));
    const int8_t* sc = reinterpret_cast<const int8_t*>(rec + 192);
    const __half2 bias = h2_splat_bits(0x6420);  // 1056 = 1024 + 32
#pragma unroll
    for (int gi = 0; gi < 2; ++gi) {
      const int g = g0 + gi;
      uint32_t ql[8], qh[8];
      {
        const uint4 a = ld16(rec + 64 * n + 32 * gi), b = ld16(rec + 64 * n + 32 * gi + 16);
        ql[0] = a.x; ql[1] = a.y; ql[2] = a.z; ql[3] = a.w; ql[4] = b.x; ql[5] = b.y; ql[6] = b.z; ql[7] = b.w;
        const uint4 c = ld16(rec + 128 + 32 * n), e = ld16(rec + 128 + 32 * n + 16);
        qh[0] = c.x; qh[1] = c.y; qh[2] = c.z; qh[3] = c.w; qh[4] = e.x; qh[5] = e.y; qh[6] = e.z; qh[7] = e.w;
      }
      const __half2 s0 = __float2half2_rn(d * static_cast<float>(sc[8 * n + 2 * g]));
      const __half2 s1 = __float2half2_rn(d * static_cast<float>(sc[8 * n + 2 * g + 1]));
#pragma unroll
      for (int wd = 0; wd < 8; ++wd) {
        uint32_t p[4], hi[2];
        nibble_pairs(ql[wd], p);
        high_bits2(qh[wd] >> (2 * g), hi);
        const __half2 s = wd < 4 ? s0 : s1;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          const uint32_t lo = odd ? p[2 + k] : p[k];
          const __half2 q = __hsub2(u32_as_h2(lo | hi[k] | 0x64006400u), bias);
          w[16 * gi + 2 * wd + k] = __hmul2(q, s);
        }
      }
    }
  }
};

}  // namespace chorus::cuda
