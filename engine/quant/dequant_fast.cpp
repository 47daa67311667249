#include "engine/quant/dequant_fast.h"

#include "engine/quant/dequant.h"
#include "engine/quant/dequant_simd.h"

namespace chorus::quant {

void dequantize_row_fast(TensorType type, const void* src, float* dst, int64_t n) {
#if defined(CHORUS_SIMD_CHUNKS)
  if (simd::has_chunks(type, n)) {
    simd::for_each_16(type, src, n, [&dst](__m256 lo, __m256 hi) {
      _mm256_storeu_ps(dst, lo);
      _mm256_storeu_ps(dst + 8, hi);
      dst += 16;
    });
    return;
  }
#endif
  dequantize_row(type, src, dst, n);
}

}  // namespace chorus::quant
