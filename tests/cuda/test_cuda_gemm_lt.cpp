// Prefill's cuBLASLt GEMM is row-invariant: a row's output has the same bits whether the call
// has 33 rows or 512 and wherever the row sits in it. Several sequences' prompt chunks share
// one GEMM, so without this a conversation's tokens would depend on who else was prefilling.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/gemm_lt.h"
#include "tests/cuda/cuda_test_util.h"

namespace chorus::cuda {
namespace {

std::vector<__half> random_half(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<__half> v(n);
  for (auto& h : v) h = __float2half(d(rng));
  return v;
}

struct Case {
  int64_t n_rows_w, k;
};

// For each row count the algorithm may be chosen at (CudaTuning::gemm_ref_rows).
class CudaGemmLtRef : public ::testing::TestWithParam<int64_t> {};

TEST_P(CudaGemmLtRef, RowsDoNotDependOnTheCallsOtherRows) {
  CHORUS_REQUIRE_GPU();
  constexpr int64_t kRef = 512;  // the most rows a call takes
  // Weight shapes of llama3-8b (q, q|k|v, gate|up, down), llama3.2-1b and SmolLM2-135M.
  for (const Case c : {Case{4096, 4096}, Case{6144, 4096}, Case{28672, 4096}, Case{4096, 14336},
                       Case{2048, 8192}, Case{576, 576}, Case{3072, 576}}) {
    std::mt19937 rng(static_cast<uint32_t>(c.n_rows_w * 31 + c.k));
    const auto w = random_half(static_cast<size_t>(c.n_rows_w * c.k), 0.02f, rng);
    const auto x = random_half(static_cast<size_t>(kRef * c.k), 1.0f, rng);
    DeviceBuffer<__half> w_d(w.size()), x_d(x.size());
    DeviceBuffer<float> out_d(static_cast<size_t>(kRef * c.n_rows_w));
    CHORUS_CUDA_CHECK(cudaMemcpy(w_d.get(), w.data(), w.size() * 2, cudaMemcpyHostToDevice));
    CHORUS_CUDA_CHECK(cudaMemcpy(x_d.get(), x.data(), x.size() * 2, cudaMemcpyHostToDevice));
    Stream stream;
    GemmLt gemm(kRef, GetParam());
    const auto run = [&](int64_t row0, int64_t n_tokens) {
      CHORUS_CUDA_CHECK(cudaMemset(out_d.get(), 0xff, out_d.size_bytes()));
      GemmShape shape{c.n_rows_w, c.k, n_tokens, c.k, c.n_rows_w};
      gemm.run(shape, w_d.get(), x_d.get() + row0 * c.k, out_d.get(), stream.get());
      CHORUS_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      std::vector<float> out(static_cast<size_t>(n_tokens * c.n_rows_w));
      CHORUS_CUDA_CHECK(cudaMemcpy(out.data(), out_d.get(), out.size() * 4, cudaMemcpyDeviceToHost));
      return out;
    };
    const std::vector<float> all = run(0, kRef);
    double sum_sq = 0;
    for (float v : all) sum_sq += static_cast<double>(v) * v;
    EXPECT_GT(sum_sq, 0.0);
    for (const auto& [row0, n_tokens] : {std::pair<int64_t, int64_t>{0, 33}, {100, 128}, {7, 200}, {300, 212},
                                        {64, 256}, {1, 511}, {448, 64}}) {
      const std::vector<float> part = run(row0, n_tokens);
      EXPECT_EQ(0, std::memcmp(part.data(), all.data() + row0 * c.n_rows_w, part.size() * 4))
          << c.n_rows_w << "x" << c.k << ": rows " << row0 << ".." << row0 + n_tokens;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RefRows, CudaGemmLtRef, ::testing::Values(512, 256, 128));

TEST(CudaGemmLt, MoreRowsThanTheMostIsAnError) {
  CHORUS_REQUIRE_GPU();
  GemmLt gemm(64);
  DeviceBuffer<__half> w(64 * 64), x(65 * 64);
  DeviceBuffer<float> out(65 * 64);
  Stream stream;
  try {
    gemm.run(GemmShape{64, 64, 65, 64, 64}, w.get(), x.get(), out.get(), stream.get());
    FAIL() << "a 65-row GEMM on a GemmLt of at most 64 rows ran";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("65 rows"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace chorus::cuda
