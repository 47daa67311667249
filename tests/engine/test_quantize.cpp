// Quantizers against the reference dequantizer, and the dequantizer against hand-built
// blocks whose values follow from the ggml layout written out independently here, so a
// bit-layout slip in either direction is caught.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/quant/blocks.h"
#include "engine/quant/dequant.h"
#include "engine/quant/fp16.h"
#include "engine/quant/quantize.h"
#include "engine/quant/tensor_type.h"

namespace chorus::quant {
namespace {

const TensorType kAllTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,
                                TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                                TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

std::string name_of(TensorType t) { return tensor_type_name(static_cast<uint32_t>(t)); }

// Relative RMS error bounds ||dequant(quant(x)) - x|| / ||x|| per type: `smooth` for
// gaussian / uniform / laplace / shifted / tiny rows, `outliers` for rows where 2% of values
// are 8x the rest (the outlier sets the block scale, so the bulk gets coarse steps). About
// 1.2-1.5x above what this quantizer measures, so a worse scale search shows, while a
// bit-layout bug (errors of order 1) fails by far.
struct ErrorBound { double smooth, outliers; };
ErrorBound error_bound(TensorType t) {
  switch (t) {
    case TensorType::F32: return {0.0, 0.0};
    case TensorType::F16: return {5e-4, 5e-4};
    case TensorType::BF16: return {4e-3, 4e-3};
    case TensorType::Q8_0: return {0.01, 0.015};
    case TensorType::Q6_K: return {0.03, 0.045};
    case TensorType::Q5_0: return {0.065, 0.11};
    case TensorType::Q5_1: return {0.05, 0.065};
    case TensorType::Q5_K: return {0.05, 0.065};
    case TensorType::Q4_0: return {0.12, 0.17};
    case TensorType::Q4_1: return {0.10, 0.13};
    case TensorType::Q4_K: return {0.10, 0.13};
    default: return {0.0, 0.0};
  }
}

enum class Dist { Gaussian, Uniform, Laplace, ShiftedGaussian, TinyGaussian, SparseOutliers };
const Dist kDists[] = {Dist::Gaussian, Dist::Uniform, Dist::Laplace, Dist::ShiftedGaussian,
                       Dist::TinyGaussian, Dist::SparseOutliers};
const char* dist_name(Dist d) {
  switch (d) {
    case Dist::Gaussian: return "gaussian";
    case Dist::Uniform: return "uniform";
    case Dist::Laplace: return "laplace";
    case Dist::ShiftedGaussian: return "shifted-gaussian";
    case Dist::TinyGaussian: return "tiny-gaussian";
    case Dist::SparseOutliers: return "sparse-outliers";
  }
  return "?";
}

std::vector<float> random_row(Dist dist, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::exponential_distribution<float> expo(1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) {
    switch (dist) {
      case Dist::Gaussian: v = normal(rng); break;
      case Dist::Uniform: v = uni(rng); break;
      case Dist::Laplace: v = (uni(rng) < 0 ? -1.0f : 1.0f) * expo(rng); break;
      case Dist::ShiftedGaussian: v = 0.7f + 0.3f * normal(rng); break;
      case Dist::TinyGaussian: v = 1e-3f * normal(rng); break;
      case Dist::SparseOutliers: v = (uni(rng) > 0.98f ? 8.0f : 0.3f) * normal(rng); break;
    }
  }
  return x;
}

std::vector<float> round_trip(TensorType t, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_size_bytes(t, n));
  quantize_row(t, x.data(), q.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(t, q.data(), y.data(), n);
  return y;
}

double relative_error(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(x[i]) * x[i];
  }
  return std::sqrt(num / den);
}

TEST(Quantize, RandomRowsRoundTripWithinBound) {
  constexpr int64_t kRow = 4096;  // 16 super-blocks, 128 blocks
  for (TensorType t : kAllTypes) {
    ASSERT_TRUE(can_quantize(t)) << name_of(t);
    for (Dist d : kDists) {
      double worst = 0.0;
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        const auto x = random_row(d, kRow, seed * 7919u + static_cast<uint32_t>(d));
        const double e = relative_error(x, round_trip(t, x));
        worst = std::max(worst, e);
      }
      const ErrorBound b = error_bound(t);
      EXPECT_LE(worst, d == Dist::SparseOutliers ? b.outliers : b.smooth) << name_of(t) << " " << dist_name(d);
      RecordProperty(name_of(t) + "_" + dist_name(d), std::to_string(worst));
    }
  }
}

TEST(Quantize, ZeroAndConstantBlocks) {
  for (TensorType t : kAllTypes) {
    std::vector<float> zeros(512, 0.0f);
    for (float v : round_trip(t, zeros)) ASSERT_EQ(v, 0.0f) << name_of(t);
    // A constant block lands on a grid point of every type (possibly via the min/offset).
    for (float c : {1.0f, -0.5f, 3.0f}) {
      std::vector<float> k(512, c);
      const auto y = round_trip(t, k);
      for (float v : y) ASSERT_NEAR(v, c, std::fabs(c) * 0.02f) << name_of(t) << " c=" << c;
    }
  }
}

TEST(Quantize, BlocksOfVeryDifferentMagnitudeKeepTheirOwnScale) {
  // Every block (and K super-block) scales on its own: a 1e4 block must not swamp a 1e-2 one.
  for (TensorType t : kAllTypes) {
    auto x = random_row(Dist::Gaussian, 1024, 99);
    for (size_t i = 0; i < 512; ++i) x[i] *= 1e-2f;
    for (size_t i = 512; i < 1024; ++i) x[i] *= 1e4f;
    const auto y = round_trip(t, x);
    const std::vector<float> small_x(x.begin(), x.begin() + 512), small_y(y.begin(), y.begin() + 512);
    EXPECT_LE(relative_error(small_x, small_y), std::max(error_bound(t).smooth, 1e-6)) << name_of(t);
  }
}

// ---- values already on the grid come back bit-exactly ----

// A random block of `t` whose values pin the quantizer's choices: every block (sub-block)
// reaches the extreme code that defines its scale, and the largest scale / min is the
// largest representable code, so the re-derived scales are the original ones.
std::vector<uint8_t> random_grid_block(TensorType t, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> raw(row_size_bytes(t, t == TensorType::Q4_K || t == TensorType::Q5_K ||
                                                     t == TensorType::Q6_K ? 256 : 32));
  for (auto& b : raw) b = static_cast<uint8_t>(byte(rng));
  const uint16_t d = f32_to_fp16(std::ldexp(1.0f + byte(rng) / 256.0f, byte(rng) % 8 - 6));
  const uint16_t m = f32_to_fp16(-std::ldexp(1.0f + byte(rng) / 256.0f, byte(rng) % 4 - 2));
  switch (t) {
    case TensorType::Q8_0: {
      auto* b = reinterpret_cast<BlockQ8_0*>(raw.data());
      b->d = d;
      for (auto& q : b->qs) if (q == -128) q = 0;
      b->qs[byte(rng) % 32] = byte(rng) % 2 ? 127 : -127;
      break;
    }
    case TensorType::Q4_0: case TensorType::Q5_0: {
      // Code 0 (value -2^(bits-1) * d) is the unique largest magnitude.
      if (t == TensorType::Q4_0) reinterpret_cast<BlockQ4_0*>(raw.data())->d = d;
      else reinterpret_cast<BlockQ5_0*>(raw.data())->d = d;
      uint8_t* qs = raw.data() + (t == TensorType::Q4_0 ? 2 : 6);
      const int j = byte(rng) % 16;
      qs[j] &= 0xF0;
      if (t == TensorType::Q5_0) raw[2 + j / 8] &= static_cast<uint8_t>(~(1u << (j % 8)));
      break;
    }
    case TensorType::Q4_1: case TensorType::Q5_1: {
      auto* b = reinterpret_cast<BlockQ4_1*>(raw.data());  // d, m lead both layouts
      b->d = d;
      b->m = m;
      uint8_t* qs = raw.data() + (t == TensorType::Q4_1 ? 4 : 8);
      qs[0] &= 0xF0;  // element 0 has code 0
      qs[1] |= 0x0F;  // element 1 has code 15 (31 with its high bit)
      if (t == TensorType::Q5_1) { raw[4] &= 0xFE; raw[4] |= 0x02; }
      break;
    }
    case TensorType::Q4_K: case TensorType::Q5_K: {
      auto* b = reinterpret_cast<BlockQ4_K*>(raw.data());  // d, dmin, scales lead both layouts
      b->d = d;
      b->dmin = f32_to_fp16(-fp16_to_f32(m));
      uint8_t sc[8], mn[8];
      for (int j = 0; j < 8; ++j) { sc[j] = static_cast<uint8_t>(1 + byte(rng) % 63); mn[j] = static_cast<uint8_t>(byte(rng) % 64); }
      sc[byte(rng) % 8] = 63;
      mn[byte(rng) % 8] = 63;
      for (int j = 0; j < 4; ++j) {
        b->scales[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
        b->scales[j + 4] = static_cast<uint8_t>(mn[j] | (mn[j + 4] >> 4) << 6);
        b->scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | (mn[j + 4] & 0xF) << 4);
      }
      // Each sub-block holds code 0 and the top code: element 0 and 1 of the sub-block.
      const bool five = t == TensorType::Q5_K;
      uint8_t* qs = raw.data() + (five ? 48 : 16);
      uint8_t* qh = raw.data() + 16;
      for (int g = 0; g < 4; ++g) {
        qs[32 * g + 0] = 0x00;
        qs[32 * g + 1] = 0xFF;
        if (five) {
          qh[0] &= static_cast<uint8_t>(~(3u << (2 * g)));
          qh[1] |= static_cast<uint8_t>(3u << (2 * g));
        }
      }
      break;
    }
    case TensorType::Q6_K: {
      auto* b = reinterpret_cast<BlockQ6_K*>(raw.data());
      b->d = d;
      for (auto& s : b->scales) { s = static_cast<int8_t>(byte(rng) % 254 - 127); if (s == 0) s = 1; }
      b->scales[byte(rng) % 16] = byte(rng) % 2 ? 127 : -127;
      // Code 0 (value -32 * scale) in every sub-block of 16: element 16*j sits in lane
      // (16*j) % 32 of half j / 8, in quarter (j % 8) / 2.
      for (int j = 0; j < 16; ++j) {
        const int h = j / 8, k = (j % 8) / 2, l = (16 * j) % 32;
        uint8_t& ql = b->ql[64 * h + l + (k % 2) * 32];
        ql &= static_cast<uint8_t>(k < 2 ? 0xF0 : 0x0F);
        b->qh[32 * h + l] &= static_cast<uint8_t>(~(3u << (2 * k)));
      }
      break;
    }
    default: break;
  }
  return raw;
}

TEST(Quantize, ValuesOnTheGridRoundTripExactly) {
  std::mt19937 rng(12345);
  for (TensorType t : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                       TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
    const int64_t n = (t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K) ? 256 : 32;
    for (int trial = 0; trial < 200; ++trial) {
      const auto block = random_grid_block(t, rng);
      std::vector<float> x(static_cast<size_t>(n));
      dequantize_row(t, block.data(), x.data(), n);
      const auto y = round_trip(t, x);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(x[i], y[i]) << name_of(t) << " trial " << trial << " element " << i;
      }
    }
  }
  // Plain types: values representable in the type are kept.
  std::vector<float> halves, bhalves;
  for (uint32_t h = 0; h < 0x7c00; h += 7) halves.push_back(fp16_to_f32(static_cast<uint16_t>(h | (h & 8 ? 0x8000 : 0))));
  for (uint32_t h = 0; h < 0x7f80; h += 13) bhalves.push_back(bf16_to_f32(static_cast<uint16_t>(h)));
  EXPECT_EQ(round_trip(TensorType::F16, halves), halves);
  EXPECT_EQ(round_trip(TensorType::BF16, bhalves), bhalves);
  EXPECT_EQ(round_trip(TensorType::F32, halves), halves);
}

// ---- dequantize_row on hand-built blocks ----

std::vector<float> decode(TensorType t, const void* block, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(t, block, y.data(), n);
  return y;
}

TEST(Dequantize, Q4_0LowNibblesFirstHalfHighNibblesSecond) {
  BlockQ4_0 b{};
  b.d = 0x3800;  // 0.5
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto y = decode(TensorType::Q4_0, &b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * (7 - j));
  }
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[16], 3.5f);
}

TEST(Dequantize, Q4_1AddsTheMin) {
  BlockQ4_1 b{};
  b.d = 0x3400;  // 0.25
  b.m = 0xBC00;  // -1
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((j + 1) % 16) << 4);
  const auto y = decode(TensorType::Q4_1, &b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * j - 1.0f);
    EXPECT_EQ(y[j + 16], 0.25f * ((j + 1) % 16) - 1.0f);
  }
}

TEST(Dequantize, Q5_0HighBitOfElementJIsBitJOfQh) {
  BlockQ5_0 b{};
  b.d = 0x3C00;  // 1
  const uint32_t qh = 0x8000A001u;  // elements 0, 13, 15, 31 have the 5th bit
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto y = decode(TensorType::Q5_0, &b, 32);
  for (int e = 0; e < 32; ++e) {
    const int lo = e < 16 ? e : 15 - (e - 16);
    const int hi = (qh >> e) & 1;
    EXPECT_EQ(y[e], static_cast<float>((lo | hi << 4) - 16)) << e;
  }
  EXPECT_EQ(y[0], 0.0f);    // 16 - 16
  EXPECT_EQ(y[1], -15.0f);  // 1 - 16
  EXPECT_EQ(y[31], 0.0f);   // (0 | 16) - 16
  EXPECT_EQ(y[16], -1.0f);  // 15 - 16
}

TEST(Dequantize, Q5_1) {
  BlockQ5_1 b{};
  b.d = 0x3800;  // 0.5
  b.m = 0x4000;  // 2
  const uint32_t qh = 0xF0F0F0F0u;
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>((3 * j) % 16 | ((5 * j) % 16) << 4);
  const auto y = decode(TensorType::Q5_1, &b, 32);
  for (int e = 0; e < 32; ++e) {
    const int j = e % 16;
    const int lo = e < 16 ? (3 * j) % 16 : (5 * j) % 16;
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(lo | ((qh >> e) & 1) << 4) + 2.0f) << e;
  }
  EXPECT_EQ(y[4], 0.5f * (12 | 16) + 2.0f);
}

TEST(Dequantize, Q8_0) {
  BlockQ8_0 b{};
  b.d = 0x3000;  // 0.125
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  const auto y = decode(TensorType::Q8_0, &b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], static_cast<float>(j - 16));
}

// The ggml K-scale packing written out: bytes 0-3 scales 0-3 (+ top bits of scales 4-7),
// 4-7 mins 0-3 (+ top bits of mins 4-7), 8-11 low nibbles of scale / min 4-7.
void pack_scales_by_spec(const int* sc, const int* mn, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
    out[j + 4] = static_cast<uint8_t>(mn[j] | (mn[j + 4] >> 4) << 6);
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | (mn[j + 4] & 0xF) << 4);
  }
}

const int kSc[8] = {1, 2, 3, 4, 17, 33, 50, 63};
const int kMn[8] = {0, 5, 10, 15, 20, 40, 60, 63};

TEST(Dequantize, KScaleUnpackingMatchesTheSpec) {
  uint8_t packed[12];
  pack_scales_by_spec(kSc, kMn, packed);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    unpack_k_scale_min(j, packed, &sc, &mn);
    EXPECT_EQ(sc, kSc[j]) << j;
    EXPECT_EQ(mn, kMn[j]) << j;
  }
}

// Element e of a Q4_K/Q5_K super-block: group e/64; the first 32 of a group are the low
// nibbles of qs[32*g + l], the next 32 the high nibbles; 5th bit in qh[l] bit 2g / 2g+1.
int k_code(const uint8_t* qs, const uint8_t* qh, int e) {
  const int g = e / 64, w = e % 64, l = w % 32;
  const int nib = w < 32 ? qs[32 * g + l] & 0xF : qs[32 * g + l] >> 4;
  const int hi = qh ? (qh[l] >> (2 * g + (w < 32 ? 0 : 1))) & 1 : 0;
  return nib | hi << 4;
}

TEST(Dequantize, Q4_K) {
  BlockQ4_K b{};
  b.d = 0x3C00;     // 1
  b.dmin = 0x3800;  // 0.5
  pack_scales_by_spec(kSc, kMn, b.scales);
  for (int k = 0; k < 128; ++k) b.qs[k] = static_cast<uint8_t>(k * 37 + 11);
  const auto y = decode(TensorType::Q4_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const float want = 1.0f * kSc[e / 32] * k_code(b.qs, nullptr, e) - 0.5f * kMn[e / 32];
    EXPECT_EQ(y[e], want) << e;
  }
  // Spot values: element 32 is the high nibble of qs[0] in sub-block 1.
  EXPECT_EQ(y[32], 2.0f * (11 >> 4) - 2.5f);
  EXPECT_EQ(y[0], 1.0f * (11 & 0xF) - 0.0f);
}

TEST(Dequantize, Q5_K) {
  BlockQ5_K b{};
  b.d = 0x3400;     // 0.25
  b.dmin = 0x3C00;  // 1
  pack_scales_by_spec(kSc, kMn, b.scales);
  for (int k = 0; k < 128; ++k) b.qs[k] = static_cast<uint8_t>(k * 53 + 3);
  for (int k = 0; k < 32; ++k) b.qh[k] = static_cast<uint8_t>(k * 29 + 101);
  const auto y = decode(TensorType::Q5_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    const float want = 0.25f * kSc[e / 32] * k_code(b.qs, b.qh, e) - 1.0f * kMn[e / 32];
    EXPECT_EQ(y[e], want) << e;
  }
  // Element 224 (group 3, high half, lane 0): high nibble of qs[96], bit 7 of qh[0].
  const int code = (b.qs[96] >> 4) | ((b.qh[0] >> 7) & 1) << 4;
  EXPECT_EQ(y[224], 0.25f * 63 * code - 63.0f);
}

TEST(Dequantize, Q6_K) {
  BlockQ6_K b{};
  b.d = 0x3800;  // 0.5
  for (int k = 0; k < 128; ++k) b.ql[k] = static_cast<uint8_t>(k * 41 + 7);
  for (int k = 0; k < 64; ++k) b.qh[k] = static_cast<uint8_t>(k * 23 + 59);
  for (int k = 0; k < 16; ++k) b.scales[k] = static_cast<int8_t>(k * 17 - 120);
  const auto y = decode(TensorType::Q6_K, &b, 256);
  for (int e = 0; e < 256; ++e) {
    // Half h of 128; quarter k of 32; lane l. Low nibbles of quarters 0/1 in ql[l] / ql[l+32],
    // high nibbles of quarters 2/3 there; bits 2k..2k+1 of qh[l] are the top two bits.
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const uint8_t ql = b.ql[64 * h + l + (k % 2) * 32];
    const int low = k < 2 ? ql & 0xF : ql >> 4;
    const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
    const float want = 0.5f * b.scales[e / 16] * static_cast<float>((low | high << 4) - 32);
    EXPECT_EQ(y[e], want) << e;
  }
  // Element 0: ql[0] = 7, qh[0] = 59 = 0b00111011 -> code 7 | 3 << 4 = 55, scale -120.
  EXPECT_EQ(y[0], 0.5f * -120 * (55 - 32));
}

TEST(Dequantize, HalfAndBfloat) {
  const uint16_t h[4] = {0x3C00, 0xC000, 0x0001, 0x7BFF};
  const auto y = decode(TensorType::F16, h, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(y[3], 65504.0f);
  const uint16_t bf[3] = {0x3F80, 0xC040, 0x4049};
  const auto z = decode(TensorType::BF16, bf, 3);
  EXPECT_EQ(z[0], 1.0f);
  EXPECT_EQ(z[1], -3.0f);
  EXPECT_EQ(z[2], 3.140625f);
}

}  // namespace
}  // namespace chorus::quant
