// Batched quantized GEMV (every input and output kind), f16 dequantization and embedding
// lookup against CPU references on fresh random data for every tensor type.
// Tolerance: weights are rounded to f16 once (relative 2^-11; Q4_K: exact integer products,
// with only its min terms and sub-block sums rounded to f16, gemv_q4k_exact.cuh) and
// activations are f16 inputs; accumulation is f32. Expected relative L2 error ~3e-4; bound 2e-3. Batch invariance is
// checked bit for bit: the first m rows of a 32-row launch equal an m-row launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/cuda/gemv_test_util.h"

namespace chorus::cuda {
namespace {

using namespace test;

// Partials output, summed on the host in split order: [m][n]. x_budget_bytes: the x chunk
// budget (GemvParams; 0: the default for M).
std::vector<float> run_partials(const Rig& rig, const DeviceBuffer<uint16_t>& x, int64_t x_stride, int m,
                                int32_t x_budget_bytes = 0) {
  GemvParams p = rig.params(m);
  p.x_budget_bytes = x_budget_bytes;
  p.in.x = reinterpret_cast<const __half*>(x.get());
  p.in.x_stride = static_cast<int32_t>(x_stride);
  p.out.kind = GemvOut::Partials;
  // NaN poison before every launch: a route that left an output unwritten would otherwise
  // pass with the previous launch's values.
  CHORUS_CUDA_CHECK(cudaMemset(rig.partials.get(), 0xff, rig.partials.size_bytes()));
  launch_gemv(rig.pr.type, p, nullptr);
  const auto parts = to_host(rig.partials);
  const int64_t n = rig.pr.dm.n_rows;
  std::vector<float> y(static_cast<size_t>(m * rig.pr.n), 0.0f);
  for (int s = 0; s < rig.n_splits; ++s)
    for (int r = 0; r < m; ++r)
      for (int64_t c = 0; c < rig.pr.n; ++c) y[r * rig.pr.n + c] += parts[(s * 32 + r) * n + c];
  return y;
}

// 32 random f16 activation rows (x_stride apart) on the device, and the CPU reference of the
// problem's product with them: [32][n].
struct RefInput {
  DeviceBuffer<uint16_t> x;
  std::vector<double> ref;
};
RefInput ref_input(const Problem& pr, int64_t x_stride, std::mt19937& rng) {
  const auto x_h = random_x_half(32, pr.k, x_stride, rng);
  std::vector<float> x_f(x_h.size());
  for (size_t i = 0; i < x_h.size(); ++i) x_f[i] = quant::fp16_to_f32(x_h[i]);
  return {to_device(x_h), reference(pr, x_f, x_stride, 32)};
}

// The 32-row launch of rig against the CPU reference (every output written and finite, relative
// L2 error under 2e-3), then each M of ms bit for bit against its first rows; the 32-row result
// into *full. Callers wrap it in ASSERT_NO_FATAL_FAILURE.
void check_batch_sizes(const Rig& rig, const RefInput& in, int64_t x_stride, std::initializer_list<int> ms,
                       const std::string& what, std::vector<float>* full) {
  *full = run_partials(rig, in.x, x_stride, 32);
  for (float v : *full) ASSERT_TRUE(std::isfinite(v)) << "unwritten or non-finite output, " << what;
  EXPECT_LT(test::rel_l2(full->data(), in.ref.data(), full->size()), 2e-3) << what;
  for (int m : ms) {
    const std::vector<float> part = run_partials(rig, in.x, x_stride, m);
    ASSERT_EQ(0, std::memcmp(part.data(), full->data(), part.size() * sizeof(float))) << "M=" << m << ", " << what;
  }
}

class GemvTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(GemvTest, MatchesCpuReferenceForEveryBatchSize) {
  CHORUS_REQUIRE_GPU();
  const TensorType type = GetParam();
  std::mt19937 rng(1234 + static_cast<int>(type));
  // K not a multiple of 256 for the 32-element types (a partial tile); rows not a multiple of 16.
  const int64_t k = is_k_type(type) ? 1024 : 864, n = 200;
  const Problem pr = make_problem(type, k, n, rng);
  const int64_t x_stride = (k + 255) / 256 * 256;
  const RefInput in = ref_input(pr, x_stride, rng);
  const auto& x = in.x;

  // Two splits of 2 tiles (K-quants) and one of 4: past 8 rows the second takes the x ring
  // (gemv.h: kGemvRingMinTiles) where the copy engine can stage x, the first the chunk loop.
  for (int n_splits : {2, 1}) {
    const Rig rig(pr, n_splits);
    std::vector<float> full;
    ASSERT_NO_FATAL_FAILURE(check_batch_sizes(
        rig, in, x_stride, {1, 3, 8, 9, 17, 31},
        tensor_type_name(static_cast<uint32_t>(type)) + ", " + std::to_string(n_splits) + " splits", &full));
    // The x chunk budget only decides how many tiles a chunk holds (gemv.h): from one tile a
    // chunk (4 KB) to the whole split (64 KB), the bits stay those of every other route.
    for (int m : {2, 8, 16}) {
      for (int32_t budget : {4096, 65536}) {
        const std::vector<float> part = run_partials(rig, x, x_stride, m, budget);
        ASSERT_EQ(0, std::memcmp(part.data(), full.data(), part.size() * sizeof(float)))
            << "M=" << m << ", x budget " << budget << ", " << n_splits << " splits";
      }
    }
  }
}

// Whole 128-row blocks past 8 rows, through the x ring (one split of 8 tiles, two of 4): the
// shape of every wide Q4_K launch of the benchmark models, where each warp of a block has rows
// (a warpgroup route, perf-notes v32, needs exactly that; the shapes above leave the last
// block's warps partly empty). The 32-row launch matches the CPU reference, and every M from 1
// to 31 gives its first rows' bits.
TEST(GemvWholeBlocks, Q4KRingMatchesCpuAndEveryBatchSize) {
  CHORUS_REQUIRE_GPU();
  std::mt19937 rng(4321);
  const int64_t k = 2048, n = 256;
  const Problem pr = make_problem(TensorType::Q4_K, k, n, rng);
  const RefInput in = ref_input(pr, k, rng);
  for (int n_splits : {1, 2}) {
    const Rig rig(pr, n_splits);
    std::vector<float> full;
    ASSERT_NO_FATAL_FAILURE(
        check_batch_sizes(rig, in, k, {1, 8, 9, 16, 17, 24, 25, 31}, std::to_string(n_splits) + " splits", &full));
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

  const std::vector<int32_t> tokens = {5, 0, 69, 5};
  const auto tok = to_device(tokens);
  const int64_t n_groups = (k + 63) / 64;
  DeviceBuffer<float> rows(tokens.size() * k), ss(tokens.size() * n_groups);
  launch_embed_rows(type, embed_params(pr, tok.get(), static_cast<int>(tokens.size()), rows.get(), ss.get()), nullptr);
  const auto e = to_host(rows);
  const auto sums = to_host(ss);
  for (size_t t = 0; t < tokens.size(); ++t) {
    for (int64_t i = 0; i < k; ++i) {
      const float want = pr.w[tokens[t] * k + i];
      ASSERT_NEAR(e[t * k + i], want, 1e-3f * std::fabs(want) + 2e-3f * row_max[tokens[t]] + 1e-7f);
    }
    for (int64_t g = 0; g < n_groups; ++g) {
      double s = 0;
      for (int64_t i = 64 * g; i < std::min<int64_t>(k, 64 * g + 64); ++i) s += double(e[t * k + i]) * e[t * k + i];
      ASSERT_NEAR(sums[t * n_groups + g], s, 1e-5 * s + 1e-12) << "token " << t << " group " << g;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GemvTest, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return tensor_type_name(static_cast<uint32_t>(info.param)); });

}  // namespace
}  // namespace chorus::cuda
