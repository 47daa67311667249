#include "engine/quant/dequant_fast.h"

#include <cstring>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "engine/quant/blocks.h"
#include "engine/quant/dequant.h"
#include "engine/quant/fp16.h"

namespace chorus::quant {
namespace {

#if defined(__AVX2__)
// 8 unsigned bytes -> 8 floats.
inline __m256 u8x8_to_f32(const uint8_t* p) {
  __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
}
inline __m256 i8x8_to_f32(const int8_t* p) {
  __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}

// Splits 16 packed bytes into 16 low nibbles and 16 high nibbles.
inline void split_nibbles(const uint8_t* qs, uint8_t lo[16], uint8_t hi[16]) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i mask = _mm_set1_epi8(0x0F);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lo), _mm_and_si128(b, mask));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(hi), _mm_and_si128(_mm_srli_epi16(b, 4), mask));
}

// Converts the 16 low (or high) nibbles in `nib` to floats d * (q + offset) [+ m] at y[0..15].
inline void nibbles_to_f32(__m128i nib, __m256i offset, __m256 d, const __m256* m, float* y) {
  __m256 a = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_cvtepu8_epi32(nib), offset));
  __m256 b = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(nib, 8)), offset));
  a = _mm256_mul_ps(d, a);
  b = _mm256_mul_ps(d, b);
  if (m) {
    a = _mm256_add_ps(a, *m);
    b = _mm256_add_ps(b, *m);
  }
  _mm256_storeu_ps(y, a);
  _mm256_storeu_ps(y + 8, b);
}

template <typename Block>
void q4_x(const Block* b, float* y, int64_t nb, int offset, bool has_min) {
  const __m128i mask = _mm_set1_epi8(0x0F);
  const __m256i off = _mm256_set1_epi32(offset);
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
    const __m256 d = _mm256_set1_ps(fp16_to_f32(b[i].d));
    __m256 m = _mm256_setzero_ps();
    if constexpr (requires { b[i].m; }) m = _mm256_set1_ps(fp16_to_f32(b[i].m));
    nibbles_to_f32(_mm_and_si128(q, mask), off, d, has_min ? &m : nullptr, y);
    nibbles_to_f32(_mm_and_si128(_mm_srli_epi16(q, 4), mask), off, d, has_min ? &m : nullptr, y + 16);
  }
}

void q4_0(const BlockQ4_0* b, float* y, int64_t nb) { q4_x(b, y, nb, -8, false); }
void q4_1(const BlockQ4_1* b, float* y, int64_t nb) { q4_x(b, y, nb, 0, true); }

void q8_0(const BlockQ8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const __m256 vd = _mm256_set1_ps(fp16_to_f32(b[i].d));
    for (int k = 0; k < kQK; k += 8) _mm256_storeu_ps(y + k, _mm256_mul_ps(vd, i8x8_to_f32(b[i].qs + k)));
  }
}

// Q4_K: y = (d*sc) * q - (dmin*m), as the reference.
void q4_k(const BlockQ4_K* b, float* y, int64_t nb) {
  alignas(32) uint8_t lo[32], hi[32];
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int g = 0, is = 0; g < kQK_K; g += 64, is += 2, q += 32) {
      split_nibbles(q, lo, hi);
      split_nibbles(q + 16, lo + 16, hi + 16);
      uint8_t sc, m;
      unpack_k_scale_min(is, b[i].scales, &sc, &m);
      const __m256 d1 = _mm256_set1_ps(d * sc), m1 = _mm256_set1_ps(dmin * m);
      unpack_k_scale_min(is + 1, b[i].scales, &sc, &m);
      const __m256 d2 = _mm256_set1_ps(d * sc), m2 = _mm256_set1_ps(dmin * m);
      for (int k = 0; k < 32; k += 8) _mm256_storeu_ps(y + k, _mm256_sub_ps(_mm256_mul_ps(d1, u8x8_to_f32(lo + k)), m1));
      for (int k = 0; k < 32; k += 8) _mm256_storeu_ps(y + 32 + k, _mm256_sub_ps(_mm256_mul_ps(d2, u8x8_to_f32(hi + k)), m2));
      y += 64;
    }
  }
}

// Q6_K: y = (d * sc) * q with q in -32..31; the reference multiplies d * sc first.
void q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
  alignas(32) int8_t q[4][32];
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        q[0][l] = static_cast<int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        q[1][l] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        q[2][l] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        q[3][l] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
      for (int part = 0; part < 4; ++part) {
        for (int half = 0; half < 2; ++half) {
          const __m256 s = _mm256_set1_ps(d * sc[half + 2 * part]);
          for (int k = 0; k < 16; k += 8) {
            const int l = half * 16 + k;
            _mm256_storeu_ps(y + part * 32 + l, _mm256_mul_ps(s, i8x8_to_f32(q[part] + l)));
          }
        }
      }
    }
  }
}
#endif

}  // namespace

void dequantize_row_fast(TensorType type, const void* src, float* dst, int64_t n) {
#if defined(__AVX2__)
  switch (type) {
    case TensorType::Q4_0: q4_0(static_cast<const BlockQ4_0*>(src), dst, n / kQK); return;
    case TensorType::Q4_1: q4_1(static_cast<const BlockQ4_1*>(src), dst, n / kQK); return;
    case TensorType::Q8_0: q8_0(static_cast<const BlockQ8_0*>(src), dst, n / kQK); return;
    case TensorType::Q4_K: q4_k(static_cast<const BlockQ4_K*>(src), dst, n / kQK_K); return;
    case TensorType::Q6_K: q6_k(static_cast<const BlockQ6_K*>(src), dst, n / kQK_K); return;
    default: break;
  }
#endif
  dequantize_row(type, src, dst, n);
}

}  // namespace chorus::quant
