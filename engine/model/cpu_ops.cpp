#include "engine/model/cpu_ops.h"

#include <cmath>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "engine/quant/dequant.h"
#include "engine/quant/dequant_fast.h"
#include "engine/quant/dequant_simd.h"
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

// The one accumulation of every dot product here, for kN input rows at once: weights arrive 16
// at a time, elements [i, i + 8) go to the first accumulator and [i + 8, i + 16) to the second,
// then reduce_lanes. Whichever route feeds the weights (a dequantized row buffer or the
// decoder's registers) and however many rows share them, a row's result has the same bits.
template <int kN>
struct RowDots {
  const float* x;
  int64_t x_stride;
  int64_t i = 0;
  __m256 a0[kN], a1[kN];

  RowDots(const float* x_rows, int64_t stride) : x(x_rows), x_stride(stride) {
    for (int k = 0; k < kN; ++k) a0[k] = a1[k] = _mm256_setzero_ps();
  }
  void add(__m256 w0, __m256 w1) {
    for (int k = 0; k < kN; ++k) {
      a0[k] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + k * x_stride + i), a0[k]);
      a1[k] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + k * x_stride + i + 8), a1[k]);
    }
    i += 16;
  }
  // The weights of [0, i) from memory.
  void add_all(const float* w, int64_t n) {
    while (i + 16 <= n) add(_mm256_loadu_ps(w + i), _mm256_loadu_ps(w + i + 8));
  }
  // Row k's sum, with the scalar tail [i, n) of weights w (none after the decoder's chunks).
  float sum(int k, const float* w, int64_t n) const {
    float s = reduce_lanes(a0[k], a1[k]);
    for (int64_t j = i; j < n; ++j) s += w[j] * x[k * x_stride + j];
    return s;
  }
};

// Four dot products of one weight row with four input rows; sharing the weight loads is what
// makes a batch cheaper per row than a single sequence.
void dot_f32_x4(const float* w, const float* x, int64_t x_stride, int64_t n, float* out) {
  RowDots<4> d(x, x_stride);
  d.add_all(w, n);
  for (int k = 0; k < 4; ++k) out[k] = d.sum(k, w, n);
}

#if defined(CHORUS_SIMD_CHUNKS)
// Up to eight input rows against output rows [o0, o1), each weight row decoded into registers
// and used at once (no row buffer to write and read back): for decode, where each weight is
// used by a few rows. Measured on the default model (2 threads): decode 1.2-1.3x faster than
// the buffered route at one row, 1.27x at five (perf-notes, CPU backend).
constexpr int64_t kMaxDecodedRows = 8;  // 16 accumulators: all of AVX2's vector registers

template <int kN>
void matmul_decoded(const TensorView& w, const float* x, float* y, const float* bias, int64_t o0, int64_t o1) {
  const int64_t n_in = w.ne0, n_out = w.ne1;
  for (int64_t o = o0; o < o1; ++o) {
    RowDots<kN> d(x, n_in);
    quant::simd::for_each_16(w.type, w.row(o), n_in, [&d](__m256 w0, __m256 w1) { d.add(w0, w1); });
    const float b = bias ? bias[o] : 0.0f;
    for (int k = 0; k < kN; ++k) y[k * n_out + o] = d.sum(k, nullptr, n_in) + b;
  }
}
#endif
}  // namespace
#endif

float dot_f32(const float* a, const float* b, int64_t n) {
#if defined(__AVX2__) && defined(__FMA__)
  RowDots<1> d(b, 0);
  d.add_all(a, n);
  return d.sum(0, a, n);
#else
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
#endif
}

void matmul(ThreadPool& pool, const TensorView& w, const float* x, float* y, int64_t n_rows,
            const float* bias) {
  const int64_t n_in = w.ne0, n_out = w.ne1;
  // Chunks of output rows per worker.
  const int64_t grain = std::max<int64_t>(1, std::min<int64_t>(64, n_out / (4 * pool.n_threads())));
#if defined(__AVX2__) && defined(__FMA__) && defined(CHORUS_SIMD_CHUNKS)
  if (n_rows <= kMaxDecodedRows && quant::simd::has_chunks(w.type, n_in)) {
    pool.parallel_for(n_out, grain, [&](int64_t o0, int64_t o1) {
      switch (n_rows) {
        case 1: matmul_decoded<1>(w, x, y, bias, o0, o1); break;
        case 2: matmul_decoded<2>(w, x, y, bias, o0, o1); break;
        case 3: matmul_decoded<3>(w, x, y, bias, o0, o1); break;
        case 4: matmul_decoded<4>(w, x, y, bias, o0, o1); break;
        case 5: matmul_decoded<5>(w, x, y, bias, o0, o1); break;
        case 6: matmul_decoded<6>(w, x, y, bias, o0, o1); break;
        case 7: matmul_decoded<7>(w, x, y, bias, o0, o1); break;
        default: matmul_decoded<8>(w, x, y, bias, o0, o1); break;
      }
    });
    return;
  }
#endif
  // More rows (prefill): each weight row is dequantized once into a buffer and shared by all
  // of them, four at a time.
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
