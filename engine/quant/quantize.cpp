#include "engine/quant/quantize.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "engine/quant/blocks.h"
#include "engine/quant/fp16.h"

namespace chorus::quant {
namespace {

int round_clamp(float v, int lo, int hi) {
  const float r = std::nearbyint(v);
  if (!(r >= static_cast<float>(lo))) return lo;  // also catches NaN
  if (r > static_cast<float>(hi)) return hi;
  return static_cast<int>(r);
}

// Squared error of x ~ d * q with q = round(x / d) clamped to [qmin, qmax].
float symmetric_error(const float* x, int n, float d, int qmin, int qmax) {
  if (d == 0.0f) {
    float e = 0.0f;
    for (int i = 0; i < n; ++i) e += x[i] * x[i];
    return e;
  }
  const float id = 1.0f / d;
  float e = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - d * static_cast<float>(round_clamp(x[i] * id, qmin, qmax));
    e += diff * diff;
  }
  return e;
}

// Scale d for x ~ d * q, q in [qmin, qmax] with qmin = -qmax - 1. The first candidate maps
// the largest-magnitude value onto qmin (the one grid point without a mirror); others
// shrink the grid a little so outliers clip, each refitted by least squares. Ties keep the
// earlier candidate, so data already on the grid gets its own scale back.
float search_symmetric_scale(const float* x, int n, int qmin, int qmax) {
  float vmax = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(vmax)) vmax = x[i];
  }
  if (vmax == 0.0f) return 0.0f;
  float best_d = vmax / static_cast<float>(qmin);
  float best_err = symmetric_error(x, n, best_d, qmin, qmax);
  for (int k = 1; k <= 8 && best_err > 0.0f; ++k) {
    const float d0 = vmax / (static_cast<float>(qmin) + 0.25f * static_cast<float>(k));
    const float id0 = 1.0f / d0;
    float sum_xq = 0.0f, sum_qq = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float q = static_cast<float>(round_clamp(x[i] * id0, qmin, qmax));
      sum_xq += x[i] * q;
      sum_qq += q * q;
    }
    if (sum_qq <= 0.0f) continue;
    const float d = sum_xq / sum_qq;
    const float err = symmetric_error(x, n, d, qmin, qmax);
    if (err < best_err) {
      best_err = err;
      best_d = d;
    }
  }
  return best_d;
}

struct ScaleMin {
  float d = 0.0f;  // step
  float m = 0.0f;  // offset: x ~ d * q + m
};

enum class MinSign { Any, NonPositive };  // K types store the offset as -dmin * (6-bit min)

float affine_error(const float* x, int n, ScaleMin s, int qmax) {
  const float id = s.d != 0.0f ? 1.0f / s.d : 0.0f;
  float e = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int q = s.d != 0.0f ? round_clamp((x[i] - s.m) * id, 0, qmax) : 0;
    const float diff = x[i] - (s.d * static_cast<float>(q) + s.m);
    e += diff * diff;
  }
  return e;
}

// Least-squares (d, m) for fixed codes q; with MinSign::NonPositive a positive m is pinned
// to 0 and d refitted alone.
ScaleMin refit_affine(const float* x, int n, float iscale, float xmin, int qmax, MinSign sign) {
  float sq = 0.0f, sqq = 0.0f, sx = 0.0f, sxq = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float q = static_cast<float>(round_clamp((x[i] - xmin) * iscale, 0, qmax));
    sq += q;
    sqq += q * q;
    sx += x[i];
    sxq += x[i] * q;
  }
  const float fn = static_cast<float>(n);
  const float det = fn * sqq - sq * sq;
  ScaleMin s;
  if (det > 0.0f) {
    s.d = (fn * sxq - sq * sx) / det;
    s.m = (sqq * sx - sq * sxq) / det;
  }
  if (det <= 0.0f || (sign == MinSign::NonPositive && s.m > 0.0f)) {
    s.m = sign == MinSign::NonPositive ? 0.0f : xmin;
    s.d = sqq > 0.0f ? (sxq - s.m * sq) / sqq : 0.0f;
  }
  return s;
}

// (d, m) for x ~ d * q + m, q in [0, qmax]: min/max first, then a few stretched grids
// refitted by least squares. Ties keep the earlier candidate (exact for on-grid data).
ScaleMin search_scale_min(const float* x, int n, int qmax, MinSign sign) {
  float xmin = x[0], xmax = x[0];
  for (int i = 1; i < n; ++i) {
    xmin = std::min(xmin, x[i]);
    xmax = std::max(xmax, x[i]);
  }
  if (sign == MinSign::NonPositive) xmin = std::min(xmin, 0.0f);
  if (!(xmax > xmin)) return ScaleMin{0.0f, xmin};
  ScaleMin best{(xmax - xmin) / static_cast<float>(qmax), xmin};
  float best_err = affine_error(x, n, best, qmax);
  for (int k = -4; k <= 4 && best_err > 0.0f; ++k) {
    const float iscale = (static_cast<float>(qmax) + 0.25f * static_cast<float>(k)) / (xmax - xmin);
    const ScaleMin s = refit_affine(x, n, iscale, xmin, qmax, sign);
    if (!(s.d > 0.0f)) continue;
    const float err = affine_error(x, n, s, qmax);
    if (err < best_err) {
      best_err = err;
      best = s;
    }
  }
  return best;
}

// ---- 32-element types ----

void quantize_q8_0(const float* x, BlockQ8_0* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    b[i].d = f32_to_fp16(amax / 127.0f);
    const float d = fp16_to_f32(b[i].d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kQK; ++j) b[i].qs[j] = static_cast<int8_t>(round_clamp(x[j] * id, -127, 127));
  }
}

// Q4_0 (n_bits 4) and Q5_0 (n_bits 5): codes q + 2^(n_bits-1) in [0, 2^n_bits).
template <typename Block, int kBits>
void quantize_symmetric_32(const float* x, Block* b, int64_t nb) {
  constexpr int kOffset = 1 << (kBits - 1);
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    b[i].d = f32_to_fp16(search_symmetric_scale(x, kQK, -kOffset, kOffset - 1));
    const float d = fp16_to_f32(b[i].d);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = round_clamp(x[j] * id, -kOffset, kOffset - 1) + kOffset;
      const int q1 = round_clamp(x[j + kQK / 2] * id, -kOffset, kOffset - 1) + kOffset;
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | (q1 & 0xF) << 4);
      qh |= static_cast<uint32_t>(q0 >> 4) << j | static_cast<uint32_t>(q1 >> 4) << (j + kQK / 2);
    }
    if constexpr (kBits == 5) std::memcpy(b[i].qh, &qh, 4);
  }
}

// Q4_1 / Q5_1: x = d * q + m with q in [0, 2^n_bits).
template <typename Block, int kBits>
void quantize_affine_32(const float* x, Block* b, int64_t nb) {
  constexpr int kQmax = (1 << kBits) - 1;
  for (int64_t i = 0; i < nb; ++i, x += kQK) {
    const ScaleMin s = search_scale_min(x, kQK, kQmax, MinSign::Any);
    b[i].d = f32_to_fp16(s.d);
    b[i].m = f32_to_fp16(s.m);
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = d != 0.0f ? round_clamp((x[j] - m) * id, 0, kQmax) : 0;
      const int q1 = d != 0.0f ? round_clamp((x[j + kQK / 2] - m) * id, 0, kQmax) : 0;
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | (q1 & 0xF) << 4);
      qh |= static_cast<uint32_t>(q0 >> 4) << j | static_cast<uint32_t>(q1 >> 4) << (j + kQK / 2);
    }
    if constexpr (kBits == 5) std::memcpy(b[i].qh, &qh, 4);
  }
}

// ---- K types ----

// Inverse of unpack_k_scale_min: 8 six-bit scales and mins into 12 bytes.
void pack_k_scale_min(const uint8_t* sc, const uint8_t* mn, uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = sc[j] & 63;
    q[j + 4] = mn[j] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    q[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | (mn[j] & 0xF) << 4);
    q[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
    q[j] |= static_cast<uint8_t>((mn[j] >> 4) << 6);
  }
}

// Per-sub-block codes of a Q4_K / Q5_K super-block: x ~ d*sc*q - dmin*mn, q in [0, qmax].
struct KAffineCodes {
  uint16_t d, dmin;
  uint8_t sc[8], mn[8];
  uint8_t q[kQK_K];
};

KAffineCodes quantize_k_affine(const float* x, int qmax) {
  ScaleMin sub[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    sub[j] = search_scale_min(x + 32 * j, 32, qmax, MinSign::NonPositive);
    max_scale = std::max(max_scale, sub[j].d);
    max_min = std::max(max_min, -sub[j].m);
  }
  KAffineCodes c{};
  c.d = f32_to_fp16(max_scale / 63.0f);
  c.dmin = f32_to_fp16(max_min / 63.0f);
  const float d = fp16_to_f32(c.d), dmin = fp16_to_f32(c.dmin);
  for (int j = 0; j < 8; ++j) {
    c.sc[j] = static_cast<uint8_t>(d > 0.0f ? round_clamp(sub[j].d / d, 0, 63) : 0);
    c.mn[j] = static_cast<uint8_t>(dmin > 0.0f ? round_clamp(-sub[j].m / dmin, 0, 63) : 0);
    const float step = d * static_cast<float>(c.sc[j]), offset = dmin * static_cast<float>(c.mn[j]);
    const float istep = step > 0.0f ? 1.0f / step : 0.0f;
    for (int l = 0; l < 32; ++l) {
      const float v = x[32 * j + l];
      c.q[32 * j + l] = static_cast<uint8_t>(step > 0.0f ? round_clamp((v + offset) * istep, 0, qmax) : 0);
    }
  }
  return c;
}

void quantize_q4_k(const float* x, BlockQ4_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    const KAffineCodes c = quantize_k_affine(x, 15);
    b[i].d = c.d;
    b[i].dmin = c.dmin;
    pack_k_scale_min(c.sc, c.mn, b[i].scales);
    // Group g of 64 elements: low nibbles hold elements g*64 + l, high nibbles g*64 + 32 + l.
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        b[i].qs[32 * g + l] = static_cast<uint8_t>(c.q[64 * g + l] | c.q[64 * g + 32 + l] << 4);
      }
    }
  }
}

void quantize_q5_k(const float* x, BlockQ5_K* b, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    const KAffineCodes c = quantize_k_affine(x, 31);
    b[i].d = c.d;
    b[i].dmin = c.dmin;
    pack_k_scale_min(c.sc, c.mn, b[i].scales);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    // As Q4_K for the low nibbles; bit 2g / 2g+1 of qh[l] is the 5th bit of element
    // g*64 + l / g*64 + 32 + l.
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        const int lo = c.q[64 * g + l], hi = c.q[64 * g + 32 + l];
        b[i].qs[32 * g + l] = static_cast<uint8_t>((lo & 0xF) | (hi & 0xF) << 4);
        b[i].qh[l] |= static_cast<uint8_t>((lo >> 4) << (2 * g) | (hi >> 4) << (2 * g + 1));
      }
    }
  }
}

void quantize_q6_k(const float* x, BlockQ6_K* b, int64_t nb) {
  constexpr int kSub = 16, kNumSub = kQK_K / kSub;
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    float sub_scale[kNumSub];
    float max_abs = 0.0f;
    for (int j = 0; j < kNumSub; ++j) {
      sub_scale[j] = search_symmetric_scale(x + kSub * j, kSub, -32, 31);
      max_abs = std::max(max_abs, std::fabs(sub_scale[j]));
    }
    b[i].d = f32_to_fp16(max_abs / 127.0f);
    const float d = fp16_to_f32(b[i].d);
    uint8_t q[kQK_K];  // codes 0..63 (value + 32)
    for (int j = 0; j < kNumSub; ++j) {
      b[i].scales[j] = static_cast<int8_t>(d > 0.0f ? round_clamp(sub_scale[j] / d, -128, 127) : 0);
      const float step = d * static_cast<float>(b[i].scales[j]);
      const float istep = step != 0.0f ? 1.0f / step : 0.0f;
      for (int l = 0; l < kSub; ++l) {
        q[kSub * j + l] = static_cast<uint8_t>(round_clamp(x[kSub * j + l] * istep, -32, 31) + 32);
      }
    }
    // Each half of 128: lane l carries elements l, l+32, l+64, l+96; low nibbles of the
    // first two in ql[l], ql[l+32], high nibbles of the last two there; 2 high bits each in qh[l].
    for (int h = 0; h < 2; ++h) {
      uint8_t* ql = b[i].ql + 64 * h;
      uint8_t* qh = b[i].qh + 32 * h;
      const uint8_t* qq = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((qq[l] & 0xF) | (qq[l + 64] & 0xF) << 4);
        ql[l + 32] = static_cast<uint8_t>((qq[l + 32] & 0xF) | (qq[l + 96] & 0xF) << 4);
        qh[l] = static_cast<uint8_t>((qq[l] >> 4) | (qq[l + 32] >> 4) << 2 | (qq[l + 64] >> 4) << 4 |
                                     (qq[l + 96] >> 4) << 6);
      }
    }
  }
}

}  // namespace

bool can_quantize(TensorType type) {
  switch (type) {
    case TensorType::F32: case TensorType::F16: case TensorType::BF16:
    case TensorType::Q4_0: case TensorType::Q4_1: case TensorType::Q5_0: case TensorType::Q5_1:
    case TensorType::Q8_0: case TensorType::Q4_K: case TensorType::Q5_K: case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

void quantize_row(TensorType type, const float* src, void* dst, int64_t n) {
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case TensorType::F16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_fp16(src[i]);
      return;
    }
    case TensorType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    default: break;
  }
  assert(can_quantize(type));
  const int64_t block = (type == TensorType::Q4_K || type == TensorType::Q5_K || type == TensorType::Q6_K) ? kQK_K : kQK;
  assert(n % block == 0);
  const int64_t nb = n / block;
  switch (type) {
    case TensorType::Q4_0: quantize_symmetric_32<BlockQ4_0, 4>(src, static_cast<BlockQ4_0*>(dst), nb); return;
    case TensorType::Q5_0: quantize_symmetric_32<BlockQ5_0, 5>(src, static_cast<BlockQ5_0*>(dst), nb); return;
    case TensorType::Q4_1: quantize_affine_32<BlockQ4_1, 4>(src, static_cast<BlockQ4_1*>(dst), nb); return;
    case TensorType::Q5_1: quantize_affine_32<BlockQ5_1, 5>(src, static_cast<BlockQ5_1*>(dst), nb); return;
    case TensorType::Q8_0: quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), nb); return;
    case TensorType::Q4_K: quantize_q4_k(src, static_cast<BlockQ4_K*>(dst), nb); return;
    case TensorType::Q5_K: quantize_q5_k(src, static_cast<BlockQ5_K*>(dst), nb); return;
    case TensorType::Q6_K: quantize_q6_k(src, static_cast<BlockQ6_K*>(dst), nb); return;
    default: assert(false && "quantize_row: type not quantizable"); return;
  }
}

}  // namespace chorus::quant
