#pragma once
// A weight row decoded 16 elements at a time into AVX2 registers, for the CPU hot paths: the
// one definition of the vector dequantization, used both to fill a row buffer
// (dequantize_row_fast) and to feed the dot products directly (cpu::matmul for few input
// rows), so that the two give the same bits. Every value equals the scalar reference of
// dequant.h: the same float operations in the same order (the integer steps, done here in
// registers instead of arrays, are exact either way).
#include <cstdint>

#if defined(__AVX2__) && defined(__F16C__)
#define CHORUS_SIMD_CHUNKS 1
#include <immintrin.h>

#include "engine/quant/blocks.h"
#include "engine/quant/dequant.h"
#include "engine/quant/fp16.h"
#include "engine/quant/tensor_type.h"

namespace chorus::quant::simd {

// Low (or high, after a shift) 8 bytes of v as 8 floats.
inline __m256 u8_lo_to_f32(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)); }
inline __m256 u8_hi_to_f32(__m128i v) { return u8_lo_to_f32(_mm_srli_si128(v, 8)); }
inline __m256 i8_lo_to_f32(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }
inline __m256 i8_hi_to_f32(__m128i v) { return i8_lo_to_f32(_mm_srli_si128(v, 8)); }

inline __m128i low_nibbles(__m128i v) { return _mm_and_si128(v, _mm_set1_epi8(0x0F)); }
inline __m128i high_nibbles(__m128i v) { return _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F)); }

// Q4_0 (x = d (q - 8)) and Q4_1 (x = d q + m): 16 nibbles -> d * (q + offset) [+ m].
template <int kOffset, bool kMin, typename F>
inline void emit_q4(__m128i nib, __m256 d, __m256 m, F&& f) {
  __m256i lo = _mm256_cvtepu8_epi32(nib), hi = _mm256_cvtepu8_epi32(_mm_srli_si128(nib, 8));
  if constexpr (kOffset != 0) {
    lo = _mm256_add_epi32(lo, _mm256_set1_epi32(kOffset));
    hi = _mm256_add_epi32(hi, _mm256_set1_epi32(kOffset));
  }
  __m256 a = _mm256_mul_ps(d, _mm256_cvtepi32_ps(lo)), b = _mm256_mul_ps(d, _mm256_cvtepi32_ps(hi));
  if constexpr (kMin) {
    a = _mm256_add_ps(a, m);
    b = _mm256_add_ps(b, m);
  }
  f(a, b);
}

template <typename Block, int kOffset, bool kMin, typename F>
inline void q4_x_chunks(const Block* b, int64_t n_blocks, F&& f) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
    const __m256 d = _mm256_set1_ps(fp16_to_f32(b[i].d));
    __m256 m = _mm256_setzero_ps();
    if constexpr (kMin) m = _mm256_set1_ps(fp16_to_f32(b[i].m));
    emit_q4<kOffset, kMin>(low_nibbles(q), d, m, f);   // elements 0..15
    emit_q4<kOffset, kMin>(high_nibbles(q), d, m, f);  // elements 16..31
  }
}

template <typename F>
inline void q8_0_chunks(const BlockQ8_0* b, int64_t n_blocks, F&& f) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const __m256 d = _mm256_set1_ps(fp16_to_f32(b[i].d));
    for (int k = 0; k < kQK; k += 16) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs + k));
      f(_mm256_mul_ps(d, i8_lo_to_f32(q)), _mm256_mul_ps(d, i8_hi_to_f32(q)));
    }
  }
}

// Q4_K: x = (d sc) q - (dmin m) per 32-element sub-block; a 64-element group is 32 bytes, the
// low nibbles its first sub-block and the high ones its second.
template <typename F>
inline void q4_k_chunks(const BlockQ4_K* b, int64_t n_blocks, F&& f) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int is = 0; is < 8; is += 2, q += 32) {
      uint8_t sc, m;
      unpack_k_scale_min(is, b[i].scales, &sc, &m);
      const __m256 d1 = _mm256_set1_ps(d * sc), m1 = _mm256_set1_ps(dmin * m);
      unpack_k_scale_min(is + 1, b[i].scales, &sc, &m);
      const __m256 d2 = _mm256_set1_ps(d * sc), m2 = _mm256_set1_ps(dmin * m);
      const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
      const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16));
      auto emit = [&](__m128i nib, __m256 ds, __m256 ms) {
        f(_mm256_sub_ps(_mm256_mul_ps(ds, u8_lo_to_f32(nib)), ms), _mm256_sub_ps(_mm256_mul_ps(ds, u8_hi_to_f32(nib)), ms));
      };
      emit(low_nibbles(q0), d1, m1);
      emit(low_nibbles(q1), d1, m1);
      emit(high_nibbles(q0), d2, m2);
      emit(high_nibbles(q1), d2, m2);
    }
  }
}

// Q6_K: x = (d sc) q, q = (4 bits of ql | 2 bits of qh << 4) - 32, per 128-element half:
// part p's element l takes ql[l + 32 (p & 1)] (low nibble for p < 2, high for p >= 2) and
// bits 2p of qh[l]; its scale is sc[l / 16 + 2p].
template <typename F>
inline void q6_k_chunks(const BlockQ6_K* b, int64_t n_blocks, F&& f) {
  const __m128i three = _mm_set1_epi8(3), k32 = _mm_set1_epi8(32);
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int n = 0; n < kQK_K; n += 128, ql += 64, qh += 32, sc += 8) {
      for (int part = 0; part < 4; ++part) {
        for (int half = 0; half < 2; ++half) {
          const int l = 16 * half;
          const __m128i lv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ql + l + 32 * (part & 1)));
          const __m128i hv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh + l));
          // Per-byte shifts through 16-bit lanes: the bits that cross from the neighbour
          // byte land above the masks.
          const __m128i high2 = _mm_and_si128(_mm_srl_epi16(hv, _mm_cvtsi32_si128(2 * part)), three);
          const __m128i q = _mm_sub_epi8(
              _mm_or_si128(part < 2 ? low_nibbles(lv) : high_nibbles(lv), _mm_slli_epi16(high2, 4)), k32);
          const __m256 s = _mm256_set1_ps(d * sc[half + 2 * part]);
          f(_mm256_mul_ps(s, i8_lo_to_f32(q)), _mm256_mul_ps(s, i8_hi_to_f32(q)));
        }
      }
    }
  }
}

template <typename F>
inline void f32_chunks(const float* p, int64_t n, F&& f) {
  for (int64_t i = 0; i < n; i += 16) f(_mm256_loadu_ps(p + i), _mm256_loadu_ps(p + i + 8));
}

template <typename F>
inline void f16_chunks(const uint16_t* p, int64_t n, F&& f) {
  for (int64_t i = 0; i < n; i += 16) {
    f(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))),
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 8))));
  }
}

template <typename F>
inline void bf16_chunks(const uint16_t* p, int64_t n, F&& f) {
  auto widen = [](const uint16_t* s) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  };
  for (int64_t i = 0; i < n; i += 16) f(widen(p + i), widen(p + i + 8));
}

// Whether for_each_16 decodes rows of this type and length.
inline bool has_chunks(TensorType type, int64_t n_elems) {
  if (n_elems % 16 != 0) return false;
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q8_0:
    case TensorType::Q4_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

// Calls f(v0, v1) for elements [16c, 16c + 8) and [16c + 8, 16c + 16) of the row, for c in
// order. Only where has_chunks(type, n_elems).
template <typename F>
inline void for_each_16(TensorType type, const void* src, int64_t n_elems, F&& f) {
  switch (type) {
    case TensorType::F32: f32_chunks(static_cast<const float*>(src), n_elems, f); return;
    case TensorType::F16: f16_chunks(static_cast<const uint16_t*>(src), n_elems, f); return;
    case TensorType::BF16: bf16_chunks(static_cast<const uint16_t*>(src), n_elems, f); return;
    case TensorType::Q4_0: q4_x_chunks<BlockQ4_0, -8, false>(static_cast<const BlockQ4_0*>(src), n_elems / kQK, f); return;
    case TensorType::Q4_1: q4_x_chunks<BlockQ4_1, 0, true>(static_cast<const BlockQ4_1*>(src), n_elems / kQK, f); return;
    case TensorType::Q8_0: q8_0_chunks(static_cast<const BlockQ8_0*>(src), n_elems / kQK, f); return;
    case TensorType::Q4_K: q4_k_chunks(static_cast<const BlockQ4_K*>(src), n_elems / kQK_K, f); return;
    case TensorType::Q6_K: q6_k_chunks(static_cast<const BlockQ6_K*>(src), n_elems / kQK_K, f); return;
    default: return;
  }
}

}  // namespace chorus::quant::simd
#endif
