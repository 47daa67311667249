#include "engine/model/cpu_ops.h"

#include <cmath>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "engine/quant/dequant.h"
#include "engine/quant/dequant_fast.h"
#include "engine/util/thread_pool.h"

namespace chorus::cpu {

#if defined(__AVX2__) && defined(__FMA__)
namespace {
inline float reduce_lanes(__m256 acc0, __m256 acc1) {
  __m256 acc = _mm256_add_ps(acc0, acc1);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}
}  // namespace
#endif

float dot_f32(const float* a, const float* b, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  float sum = reduce_lanes(acc0, acc1);
#else
  float sum = 0.0f;
#endif
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

#if defined(__AVX2__) && defined(__FMA__)
namespace {
// Four dot products of one weight row with four input rows, each computed with exactly the
// operations and order of dot_f32, so grouping rows never changes a result. Sharing the
// weight loads is what makes a batch cheaper per row than a single sequence.
void dot_f32_x4(const float* w, const float* x, int64_t x_stride, int64_t n, float* out) {
  __m256 a0[4], a1[4];
  for (int k = 0; k < 4; ++k) a0[k] = a1[k] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = _mm256_loadu_ps(w + i), w1 = _mm256_loadu_ps(w + i + 8);
    for (int k = 0; k < 4; ++k) {
      a0[k] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + k * x_stride + i), a0[k]);
      a1[k] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + k * x_stride + i + 8), a1[k]);
    }
  }
  for (int k = 0; k < 4; ++k) {
    float sum = reduce_lanes(a0[k], a1[k]);
    for (int64_t j = i; j < n; ++j) sum += w[j] * x[k * x_stride + j];
    out[k] = sum;
  }
}
}  // namespace
#endif

void matmul(ThreadPool& pool, const TensorView& w, const float* x, float* y, int64_t n_rows,
            const float* bias) {
  const int64_t n_in = w.ne0, n_out = w.ne1;
  // Chunks of output rows; each worker keeps one dequantized weight row.
  const int64_t grain = std::max<int64_t>(1, std::min<int64_t>(64, n_out / (4 * pool.n_threads())));
  pool.parallel_for(n_out, grain, [&](int64_t o0, int64_t o1) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(n_in));
    for (int64_t o = o0; o < o1; ++o) {
      quant::dequantize_row_fast(w.type, w.row(o), row.data(), n_in);
      const float b = bias ? bias[o] : 0.0f;
      int64_t r = 0;
#if defined(__AVX2__) && defined(__FMA__)
      for (float d4[4]; r + 4 <= n_rows; r += 4) {
        dot_f32_x4(row.data(), x + r * n_in, n_in, n_in, d4);
        for (int k = 0; k < 4; ++k) y[(r + k) * n_out + o] = d4[k] + b;
      }
#endif
      for (; r < n_rows; ++r) y[r * n_out + o] = dot_f32(row.data(), x + r * n_in, n_in) + b;
    }
  });
}

void rmsnorm(const float* x, const float* weight, float* y, int64_t n_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double ss = 0.0;  // a double sum keeps the norm exact to float rounding at any width
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale * weight[i];
  }
}

void rope(float* vec, int32_t n_heads, int32_t head_dim, int32_t rope_dim, int32_t pos, float base,
          RopeStyle style) {
  const int32_t half = rope_dim / 2;
  thread_local std::vector<float> cos_t, sin_t;
  cos_t.resize(static_cast<size_t>(half));
  sin_t.resize(static_cast<size_t>(half));
  for (int32_t i = 0; i < half; ++i) {
    const double theta = pos * std::pow(static_cast<double>(base), -2.0 * i / rope_dim);
    cos_t[i] = static_cast<float>(std::cos(theta));
    sin_t[i] = static_cast<float>(std::sin(theta));
  }
  for (int32_t h = 0; h < n_heads; ++h) {
    float* v = vec + static_cast<int64_t>(h) * head_dim;
    for (int32_t i = 0; i < half; ++i) {
      const int32_t a = style == RopeStyle::Normal ? 2 * i : i;
      const int32_t b = style == RopeStyle::Normal ? 2 * i + 1 : i + half;
      const float x0 = v[a], x1 = v[b];
      v[a] = x0 * cos_t[i] - x1 * sin_t[i];
      v[b] = x0 * sin_t[i] + x1 * cos_t[i];
    }
  }
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void load_vector(const TensorView& v, float* out) { quant::dequantize_row(v.type, v.data, out, v.ne0 * v.ne1); }

}  // namespace chorus::cpu
