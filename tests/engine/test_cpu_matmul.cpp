// cpu::matmul takes two routes: up to eight input rows, each weight row decoded into registers
// and used at once; more rows, each weight row dequantized once into a buffer and shared. A
// row's result must have the same bits on both (batch invariance of the CPU backend) and be
// the dot product of the reference dequantization with the input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/model/cpu_ops.h"
#include "engine/quant/dequant.h"
#include "engine/quant/fp16.h"
#include "engine/util/thread_pool.h"
#include "support/test_support.h"

namespace chorus {
namespace {

struct MatmulCase {
  TensorType type;
  int64_t n_in;
};

// Float weights as values in [-1, 1] rather than random bits (whose huge magnitudes overflow
// a float sum that the double reference does not).
void encode_float_weights(TensorType type, std::vector<uint8_t>& raw, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  if (type == TensorType::F32) {
    for (size_t i = 0; i < raw.size(); i += 4) {
      const float v = u(rng);
      std::memcpy(&raw[i], &v, 4);
    }
  } else if (type == TensorType::F16 || type == TensorType::BF16) {
    for (size_t i = 0; i < raw.size(); i += 2) {
      const float v = u(rng);
      const uint16_t h = type == TensorType::F16 ? quant::f32_to_fp16(v) : quant::f32_to_bf16(v);
      std::memcpy(&raw[i], &h, 2);
    }
  }
}

class CpuMatmul : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(CpuMatmul, EveryRowCountGivesTheSameBitsAndTheReferenceValue) {
  const auto [type, n_in] = GetParam();
  const auto traits = *tensor_type_traits(static_cast<uint32_t>(type));
  const int64_t n_out = 37, max_rows = 11;
  std::mt19937 rng(static_cast<uint32_t>(type) * 131u + static_cast<uint32_t>(n_in));
  std::vector<uint8_t> raw = test::random_blocks(type, n_out * n_in / traits.block_elems, rng);
  encode_float_weights(type, raw, rng);
  std::vector<float> x(static_cast<size_t>(max_rows * n_in)), bias(static_cast<size_t>(n_out));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : x) v = u(rng);
  for (float& v : bias) v = u(rng);
  TensorView w;
  w.type = type;
  w.ne0 = n_in;
  w.ne1 = n_out;
  w.data = raw.data();
  w.size_bytes = raw.size();
  std::vector<float> w_ref(static_cast<size_t>(n_in * n_out));
  quant::dequantize_row(type, raw.data(), w_ref.data(), n_in * n_out);

  ThreadPool pool(2);
  std::vector<float> all(static_cast<size_t>(max_rows * n_out));
  cpu::matmul(pool, w, x.data(), all.data(), max_rows, bias.data());
  int n_checked = 0;
  for (int64_t n_rows = 1; n_rows < max_rows; ++n_rows) {
    std::vector<float> part(static_cast<size_t>(n_rows * n_out), -1.0f);
    cpu::matmul(pool, w, x.data(), part.data(), n_rows, bias.data());
    for (int64_t r = 0; r < n_rows; ++r) {
      for (int64_t o = 0; o < n_out; ++o) {
        const float got = part[r * n_out + o], want = all[r * n_out + o];
        ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << n_rows << " rows, row " << r << ", output " << o << ": " << got
                                                  << " vs " << want << " with " << max_rows;
        ++n_checked;
      }
    }
  }
  for (int64_t r = 0; r < max_rows; ++r) {
    for (int64_t o = 0; o < n_out; ++o) {
      double ref = bias[o], mag = std::fabs(bias[o]);
      for (int64_t i = 0; i < n_in; ++i) {
        const double p = static_cast<double>(w_ref[o * n_in + i]) * x[r * n_in + i];
        ref += p;
        mag += std::fabs(p);
      }
      EXPECT_NEAR(all[r * n_out + o], ref, 1e-5 * mag + 1e-6) << "row " << r << ", output " << o;
    }
  }
  EXPECT_GT(n_checked, 0);
}

// Each type with a row length that is a multiple of 16 (the register route for up to eight
// rows) and, for the float types, one that is not (the buffered route for every row count).
INSTANTIATE_TEST_SUITE_P(
    Types, CpuMatmul,
    ::testing::Values(MatmulCase{TensorType::F32, 96}, MatmulCase{TensorType::F32, 41}, MatmulCase{TensorType::F16, 96},
                      MatmulCase{TensorType::F16, 41}, MatmulCase{TensorType::BF16, 96}, MatmulCase{TensorType::Q4_0, 96},
                      MatmulCase{TensorType::Q4_1, 576}, MatmulCase{TensorType::Q5_0, 96}, MatmulCase{TensorType::Q5_1, 96},
                      MatmulCase{TensorType::Q8_0, 576}, MatmulCase{TensorType::Q4_K, 512}, MatmulCase{TensorType::Q5_K, 512},
                      MatmulCase{TensorType::Q6_K, 512}),
    [](const auto& info) {
      return std::string(tensor_type_traits(static_cast<uint32_t>(info.param.type))->name) + "_" +
             std::to_string(info.param.n_in);
    });

}  // namespace
}  // namespace chorus
