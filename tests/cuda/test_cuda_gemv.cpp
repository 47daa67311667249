// Batched quantized GEMV, f16 dequantization and embedding lookup against the scalar CPU
// dequantizer (engine/quant/dequant.h) on fresh random data for every tensor type.
// Tolerance: weights are rounded to f16 once (relative 2^-11) and activations are f16
// inputs; accumulation is f32. Expected relative L2 error ~3e-4; bound 2e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/device_memory.h"
#include "cuda/device_model.h"
#include "cuda/gemv.h"
#include "engine/quant/dequant.h"
#include "engine/quant/fp16.h"
#include "tests/cuda/cuda_test_util.h"

namespace chorus::cuda {
namespace {

using test::random_tensor;

const TensorType kAllTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,
                                TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                                TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

bool is_k_type(TensorType t) { return t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K; }

struct Problem {
  TensorType type;
  int64_t k, n;
  std::vector<uint8_t> raw;
  std::vector<float> w;       // [n][k] dequantized on the CPU
  DeviceMatrix dm;
};

Problem make_problem(TensorType type, int64_t k, int64_t n, std::mt19937& rng) {
  Problem p{type, k, n, random_tensor(type, k, n, rng), {}, {}};
  p.w.resize(static_cast<size_t>(k * n));
  const size_t rb = row_size_bytes(type, k);
  for (int64_t r = 0; r < n; ++r) quant::dequantize_row(type, p.raw.data() + r * rb, p.w.data() + r * k, k);
  TensorView tv;
  tv.name = "test";
  tv.type = type;
  tv.ne0 = k;
  tv.ne1 = n;
  tv.data = p.raw.data();
  tv.size_bytes = p.raw.size();
  p.dm = upload_matrix(tv);
  return p;
}

// Runs the GEMV for m rows of x and returns [m][n] with the partials summed in split order.
std::vector<float> run_gemv(const Problem& pr, const std::vector<uint16_t>& x_h, int64_t x_stride, int m,
                            int n_splits) {
  DeviceBuffer<uint16_t> x(x_h.size());
  CHORUS_CUDA_CHECK(cudaMemcpy(x.get(), x_h.data(), x.size_bytes(), cudaMemcpyHostToDevice));
  const int64_t split_stride = int64_t{m} * pr.n;
  DeviceBuffer<float> out(static_cast<size_t>(split_stride * n_splits));
  CHORUS_CUDA_CHECK(cudaMemset(out.get(), 0xff, out.size_bytes()));  // NaN poison
  GemvParams p;
  p.w[0] = pr.dm.ptr();
  p.n_rows[0] = static_cast<int32_t>(pr.n);
  p.n_mats = 1;
  p.n_tiles = pr.dm.n_tiles;
  p.record_bytes = pr.dm.record_bytes;
  p.k_elems = static_cast<int32_t>(pr.k);
  p.x = reinterpret_cast<const __half*>(x.get());
  p.x_stride = static_cast<int32_t>(x_stride);
  p.n_seqs = m;
  p.out = out.get();
  p.out_stride = static_cast<int32_t>(pr.n);
  p.split_stride = split_stride;
  p.n_splits = n_splits;
  p.tiles_per_split = (p.n_tiles + n_splits - 1) / n_splits;
  launch_gemv(pr.type, p, nullptr);
  CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> parts(out.size());
  CHORUS_CUDA_CHECK(cudaMemcpy(parts.data(), out.get(), out.size_bytes(), cudaMemcpyDeviceToHost));
  std::vector<float> y(static_cast<size_t>(split_stride), 0.0f);
  for (int s = 0; s < n_splits; ++s)
    for (int64_t i = 0; i < split_stride; ++i) y[i] += parts[s * split_stride + i];
  return y;
}

class GemvTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(GemvTest, MatchesCpuReferenceForEveryBatchSize) {
  CHORUS_REQUIRE_GPU();
  const TensorType type = GetParam();
  std::mt19937 rng(1234 + static_cast<int>(type));
  // K not a multiple of 256 for the 32-element types (a partial tile); rows not a multiple of 64.
  const int64_t k = is_k_type(type) ? 1024 : 864, n = 200;
  const Problem pr = make_problem(type, k, n, rng);
  const int max_m = 32;
  const int64_t x_stride = (k + 255) / 256 * 256;
  std::vector<uint16_t> x_h(static_cast<size_t>(max_m * x_stride), 0);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int m = 0; m < max_m; ++m)
    for (int64_t i = 0; i < k; ++i) x_h[m * x_stride + i] = quant::f32_to_fp16(nd(rng));

  std::vector<double> ref(static_cast<size_t>(max_m * n));
  for (int m = 0; m < max_m; ++m)
    for (int64_t r = 0; r < n; ++r) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += double(pr.w[r * k + i]) * quant::fp16_to_f32(x_h[m * x_stride + i]);
      ref[m * n + r] = s;
    }

  const int n_splits = 2;
  const std::vector<float> full = run_gemv(pr, x_h, x_stride, max_m, n_splits);
  for (float v : full) ASSERT_TRUE(std::isfinite(v)) << "unwritten or non-finite output";
  const double err = test::rel_l2(full.data(), ref.data(), full.size());
  EXPECT_LT(err, 2e-3) << tensor_type_name(static_cast<uint32_t>(type));

  // Batch invariance: the first m rows give bit-identical results for every m.
  for (int m : {1, 3, 8, 9, 17, 31}) {
    const std::vector<float> part = run_gemv(pr, x_h, x_stride, m, n_splits);
    ASSERT_EQ(0, std::memcmp(part.data(), full.data(), part.size() * sizeof(float))) << "M=" << m;
  }
}

TEST_P(GemvTest, DequantF16AndEmbedMatchCpu) {
  CHORUS_REQUIRE_GPU();
  const TensorType type = GetParam();
  std::mt19937 rng(99 + static_cast<int>(type));
  const int64_t k = is_k_type(type) ? 512 : 576, n = 70;
  const Problem pr = make_problem(type, k, n, rng);
  const int64_t k_pad = int64_t{pr.dm.n_tiles} * 256;
  DeviceBuffer<__half> f16(static_cast<size_t>(n * k_pad));
  launch_dequant_f16(type, pr.dm.ptr(), n, pr.dm.n_tiles, pr.dm.record_bytes, f16.get(), nullptr);
  std::vector<uint16_t> got(f16.size());
  CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
  CHORUS_CUDA_CHECK(cudaMemcpy(got.data(), f16.get(), f16.size_bytes(), cudaMemcpyDeviceToHost));
  // Per weight: one f16 rounding of the scale and one of the result; for K-quants the
  // result d*sc*q - dmin*m can cancel, so the bound is relative to the row's largest weight.
  std::vector<float> row_max(static_cast<size_t>(n), 0.0f);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < k; ++i) row_max[r] = std::max(row_max[r], std::fabs(pr.w[r * k + i]));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < k; ++i) {
      const float want = pr.w[r * k + i], have = quant::fp16_to_f32(got[r * k_pad + i]);
      ASSERT_NEAR(have, want, 1e-3f * std::fabs(want) + 2e-3f * row_max[r] + 1e-7f) << "row " << r << " col " << i;
    }

  std::vector<int32_t> tokens = {5, 0, 69, 5};
  DeviceBuffer<int32_t> tok(tokens.size());
  CHORUS_CUDA_CHECK(cudaMemcpy(tok.get(), tokens.data(), tok.size_bytes(), cudaMemcpyHostToDevice));
  DeviceBuffer<float> rows(tokens.size() * k);
  launch_embed_rows(type, pr.dm.ptr(), pr.dm.n_tiles, pr.dm.record_bytes, static_cast<int32_t>(k), tok.get(),
                    static_cast<int32_t>(tokens.size()), rows.get(), static_cast<int32_t>(k), nullptr);
  std::vector<float> e(rows.size());
  CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
  CHORUS_CUDA_CHECK(cudaMemcpy(e.data(), rows.get(), rows.size_bytes(), cudaMemcpyDeviceToHost));
  for (size_t t = 0; t < tokens.size(); ++t)
    for (int64_t i = 0; i < k; ++i) {
      const float want = pr.w[tokens[t] * k + i];
      ASSERT_NEAR(e[t * k + i], want, 1e-3f * std::fabs(want) + 2e-3f * row_max[tokens[t]] + 1e-7f);
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GemvTest, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return tensor_type_name(static_cast<uint32_t>(info.param)); });

}  // namespace
}  // namespace chorus::cuda
