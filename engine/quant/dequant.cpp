#include "engine/quant/dequant.h"

#include <cassert>
#include <cstring>

#include "engine/quant/blocks.h"
#include "engine/quant/fp16.h"

namespace chorus::quant {
namespace {

void dequant_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>((b[i].qs[j] & 0xF) - 8);
      y[j + kQK / 2] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}

void dequant_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(b[i].qs[j] & 0xF) + m;
      y[j + kQK / 2] = d * static_cast<float>(b[i].qs[j] >> 4) + m;
    }
  }
}

void dequant_q5_0(const BlockQ5_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int hi0 = ((qh >> j) & 1) << 4;
      const int hi1 = ((qh >> (j + 16)) & 1) << 4;
      y[j] = d * static_cast<float>(((b[i].qs[j] & 0xF) | hi0) - 16);
      y[j + kQK / 2] = d * static_cast<float>(((b[i].qs[j] >> 4) | hi1) - 16);
    }
  }
}

void dequant_q5_1(const BlockQ5_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int hi0 = ((qh >> j) & 1) << 4;
      const int hi1 = ((qh >> (j + 16)) & 1) << 4;
      y[j] = d * static_cast<float>((b[i].qs[j] & 0xF) | hi0) + m;
      y[j + kQK / 2] = d * static_cast<float>((b[i].qs[j] >> 4) | hi1) + m;
    }
  }
}

void dequant_q8_0(const BlockQ8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) y[j] = d * static_cast<float>(b[i].qs[j]);
  }
}

// Q4_K: 4 groups of 64; each group is two 32-element sub-blocks sharing 32 bytes of qs
// (low nibbles first sub-block, high nibbles second).
void dequant_q4_k(const BlockQ4_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int g = 0, is = 0; g < kQK_K; g += 64, is += 2, q += 32) {
      uint8_t sc, m;
      unpack_k_scale_min(is, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      unpack_k_scale_min(is + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequant_q5_k(const BlockQ5_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    uint8_t u1 = 1, u2 = 2;
    for (int g = 0, is = 0; g < kQK_K; g += 64, is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
      uint8_t sc, m;
      unpack_k_scale_min(is, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      unpack_k_scale_min(is + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * static_cast<float>((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    }
  }
}

// Q6_K: two halves of 128; in each, 32 lanes l give four elements l, l+32, l+64, l+96.
void dequant_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = static_cast<int8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = static_cast<int8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * static_cast<float>(q1);
        y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case TensorType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case TensorType::F16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(s[i]);
      return;
    }
    case TensorType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case TensorType::Q4_0: dequant_q4_0(static_cast<const BlockQ4_0*>(src), dst, n / kQK); return;
    case TensorType::Q4_1: dequant_q4_1(static_cast<const BlockQ4_1*>(src), dst, n / kQK); return;
    case TensorType::Q5_0: dequant_q5_0(static_cast<const BlockQ5_0*>(src), dst, n / kQK); return;
    case TensorType::Q5_1: dequant_q5_1(static_cast<const BlockQ5_1*>(src), dst, n / kQK); return;
    case TensorType::Q8_0: dequant_q8_0(static_cast<const BlockQ8_0*>(src), dst, n / kQK); return;
    case TensorType::Q4_K: dequant_q4_k(static_cast<const BlockQ4_K*>(src), dst, n / kQK_K); return;
    case TensorType::Q5_K: dequant_q5_k(static_cast<const BlockQ5_K*>(src), dst, n / kQK_K); return;
    case TensorType::Q6_K: dequant_q6_k(static_cast<const BlockQ6_K*>(src), dst, n / kQK_K); return;
    default: assert(false && "dequantize_row: type not computable"); return;
  }
}

}  // namespace chorus::quant
