// The vectorised dequantization must be bit-identical to the scalar reference.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/quant/dequant.h"
#include "engine/quant/dequant_fast.h"
#include "engine/quant/fp16.h"

namespace chorus::quant {
namespace {

class DequantFast : public ::testing::TestWithParam<TensorType> {};

TEST_P(DequantFast, BitIdenticalToReference) {
  const TensorType type = GetParam();
  const auto traits = *tensor_type_traits(static_cast<uint32_t>(type));
  std::mt19937 rng(static_cast<uint32_t>(type) * 7919u + 1);
  const int64_t n_blocks = 37;
  const int64_t n = n_blocks * traits.block_elems;
  std::vector<uint8_t> raw(static_cast<size_t>(n_blocks) * traits.block_size_bytes);
  for (int trial = 0; trial < 20; ++trial) {
    for (auto& b : raw) b = static_cast<uint8_t>(rng());
    // Random bytes in the half-float scale fields can be NaN/Inf; give every block sane scales
    // so that equality is meaningful (NaN != NaN).
    std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
    for (int64_t blk = 0; blk < n_blocks; ++blk) {
      uint8_t* p = raw.data() + blk * static_cast<int64_t>(traits.block_size_bytes);
      const uint16_t d = f32_to_fp16(scale(rng)), m = f32_to_fp16(scale(rng));
      if (type == TensorType::Q6_K) {
        std::memcpy(p + 208, &d, 2);
      } else if (type != TensorType::F32 && type != TensorType::F16 && type != TensorType::BF16) {
        std::memcpy(p, &d, 2);
        if (type == TensorType::Q4_1 || type == TensorType::Q5_1 || type == TensorType::Q4_K || type == TensorType::Q5_K) {
          std::memcpy(p + 2, &m, 2);
        }
      }
    }
    std::vector<float> ref(static_cast<size_t>(n)), fast(static_cast<size_t>(n), -12345.0f);
    dequantize_row(type, raw.data(), ref.data(), n);
    dequantize_row_fast(type, raw.data(), fast.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(ref[i])) continue;  // F32/F16 from random bits
      ASSERT_EQ(std::memcmp(&ref[i], &fast[i], 4), 0) << "element " << i << ": " << ref[i] << " vs " << fast[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DequantFast,
                         ::testing::Values(TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q4_0,
                                           TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                                           TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K),
                         [](const auto& info) { return std::string(tensor_type_traits(static_cast<uint32_t>(info.param))->name); });

}  // namespace
}  // namespace chorus::quant
