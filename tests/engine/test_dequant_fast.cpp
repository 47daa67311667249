// The vectorised dequantization must be bit-identical to the scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/quant/dequant.h"
#include "engine/quant/dequant_fast.h"
#include "support/test_support.h"

namespace chorus::quant {
namespace {

class DequantFast : public ::testing::TestWithParam<TensorType> {};

TEST_P(DequantFast, BitIdenticalToReference) {
  const TensorType type = GetParam();
  const auto traits = *tensor_type_traits(static_cast<uint32_t>(type));
  std::mt19937 rng(static_cast<uint32_t>(type) * 7919u + 1);
  for (int trial = 0; trial < 20; ++trial) {
    // Float rows alternate between 592 elements (a multiple of 16: the vector route) and 37
    // (left to the reference); 37 quantized blocks are always whole 16s.
    const int64_t n_blocks = traits.block_elems == 1 && trial % 2 == 1 ? 592 : 37;
    const int64_t n = n_blocks * traits.block_elems;
    const std::vector<uint8_t> raw = test::random_blocks(type, n_blocks, rng);
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
