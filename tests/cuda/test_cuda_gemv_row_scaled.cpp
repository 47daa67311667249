// The normalized input written by the residual's producer (CudaTuning::norm_from_producer):
// the producers (a residual-output GEMV, the embedding lookup, the GEMM route's residual norm)
// write f16(x * w) for the next RMSNorm, and a GEMV with GemvIn::HalfRowScaled input stages
// those rows as f16 and scales each output by its row's 1 / rms (gemv.h). Checked against CPU
// references on fresh random data: the f16 rows bit for bit (the producer's f32 product
// rounded once), the product within the f16 tolerance of the normalized product, and every
// row's result the same bits whatever M, reduction route or staging route (batch invariance).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cuda/layer_ops.h"
#include "tests/cuda/gemv_test_util.h"

namespace chorus::cuda {
namespace {

using namespace test;

const TensorType kTypes[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::F16};

// f16(x[m][i] * w[i]) as the device rounds it (one f32 product, round to nearest even).
std::vector<uint16_t> xw_reference(const std::vector<float>& x, const std::vector<float>& w, int rows, int64_t k,
                                   int64_t stride) {
  std::vector<uint16_t> h(static_cast<size_t>(rows * stride), 0);
  for (int m = 0; m < rows; ++m)
    for (int64_t i = 0; i < k; ++i) h[m * stride + i] = quant::f32_to_fp16(x[m * k + i] * w[i]);
  return h;
}

std::vector<uint16_t> to_host_half(const DeviceBuffer<__half>& d) {
  std::vector<uint16_t> h(d.size());
  CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
  CHORUS_CUDA_CHECK(cudaMemcpy(h.data(), d.get(), d.size_bytes(), cudaMemcpyDeviceToHost));
  return h;
}

class GemvRowScaledTest : public ::testing::TestWithParam<TensorType> {};

// A residual-output GEMV writes the next norm's f16 rows (both epilogue routes), and the GEMV
// behind the norm reads them.
TEST_P(GemvRowScaledTest, ProducerRowsThenScaledProduct) {
  CHORUS_REQUIRE_GPU();
  const TensorType type = GetParam();
  for (const int64_t k : {int64_t{1536}, int64_t{2048}, int64_t{960}}) {
    if (is_k_type(type) && k % 256 != 0) continue;  // K-quant rows are whole 256-column blocks
    std::mt19937 rng(71 + static_cast<int>(type) + static_cast<int>(k));
    // The producer: residual [32][k] += W_p x_p, W_p of k rows over 512 columns.
    const int64_t k_p = 512;
    const Problem prod = make_problem(type, k_p, k, rng);
    const auto xp_h = random_x_half(32, k_p, k_p, rng);
    const auto xp = to_device(xp_h);
    const auto resid0 = normal_floats(static_cast<size_t>(32 * k), rng);
    const auto w = normal_floats(static_cast<size_t>(k), rng, 1.0f);
    const auto d_w = to_device(w);
    const int64_t n_groups = (k + 63) / 64, xw_stride = (k + 7) / 8 * 8;
    DeviceBuffer<float> resid(resid0.size()), ss(static_cast<size_t>(32 * n_groups));
    DeviceBuffer<__half> xw(static_cast<size_t>(32 * xw_stride));
    const Rig prod_rig(prod, 2);
    auto produce = [&](int m, int32_t early) {
      CHORUS_CUDA_CHECK(cudaMemcpy(resid.get(), resid0.data(), resid.size_bytes(), cudaMemcpyHostToDevice));
      CHORUS_CUDA_CHECK(cudaMemset(xw.get(), 0xff, xw.size_bytes()));
      GemvParams p = prod_rig.params(m);
      p.early_loads = early;
      p.in.x = reinterpret_cast<const __half*>(xp.get());
      p.in.x_stride = static_cast<int32_t>(k_p);
      p.out.kind = GemvOut::Residual;
      p.out.out = resid.get();
      p.out.out_stride = static_cast<int32_t>(k);
      p.out.ss = ss.get();
      p.out.ss_stride = static_cast<int32_t>(n_groups);
      p.out.xw_h = xw.get();
      p.out.xw_h_stride = static_cast<int32_t>(xw_stride);
      p.out.xw_norm_w = d_w.get();
      launch_gemv(type, p, nullptr);
    };
    produce(32, 0);
    const auto r32 = to_host(resid);
    const auto ss32 = to_host(ss);
    auto xw32 = to_host_half(xw);
    const auto want = xw_reference(r32, w, 32, k, xw_stride);
    for (int m = 0; m < 32; ++m) {
      ASSERT_EQ(0, std::memcmp(xw32.data() + m * xw_stride, want.data() + m * xw_stride, 2 * k)) << "K=" << k << " row " << m;
    }
    // Every block of the cluster writing a share (kGemvSharedFinish), and few rows: same bits,
    // and rows past M untouched.
    for (const int32_t early : {int32_t{0}, int32_t{kGemvSharedFinish}}) {
      for (int m : {1, 8, 13}) {
        produce(m, early);
        const auto xw_m = to_host_half(xw);
        ASSERT_EQ(0, std::memcmp(xw_m.data(), xw32.data(), static_cast<size_t>(m * xw_stride) * 2))
            << "K=" << k << " M=" << m << " early " << early;
        ASSERT_EQ(0xffff, xw_m[static_cast<size_t>(m * xw_stride)]) << "row past M written";
      }
    }
    produce(32, 0);  // the consumer's input again (the pads between rows stay poisoned)

    // The consumer: y = (1 / rms) W (f16(x w)), W of 200 rows over k columns, in 2 splits
    // (2048: 4-tile splits, so more than 8 rows go through the x ring).
    const int64_t n = 200;
    const Problem cons = make_problem(type, k, n, rng);
    const Rig rig(cons, 2);
    DeviceBuffer<float> out(static_cast<size_t>(32 * n));
    auto consume = [&](int m, GemvReduce reduce) {
      CHORUS_CUDA_CHECK(cudaMemset(out.get(), 0xff, out.size_bytes()));
      GemvParams p = rig.params(m);
      p.split.reduce = reduce;
      p.in.kind = GemvIn::HalfRowScaled;
      p.in.x = xw.get();
      p.in.x_stride = static_cast<int32_t>(xw_stride);
      p.in.ss = ss.get();
      p.in.ss_stride = static_cast<int32_t>(n_groups);
      p.in.eps = 1e-5f;
      p.out.kind = GemvOut::Sum;
      p.out.out = out.get();
      p.out.out_stride = static_cast<int32_t>(n);
      launch_gemv(type, p, nullptr);
      auto y = to_host(out);
      y.resize(static_cast<size_t>(m * n));
      return y;
    };
    const auto full = consume(32, GemvReduce::Auto);
    // The reference: the exactly normalized rows in double precision.
    std::vector<float> x_norm(static_cast<size_t>(32 * k));
    for (int m = 0; m < 32; ++m) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += double(r32[m * k + i]) * r32[m * k + i];
      const double rstd = 1.0 / std::sqrt(s / static_cast<double>(k) + 1e-5);
      for (int64_t i = 0; i < k; ++i) x_norm[m * k + i] = static_cast<float>(r32[m * k + i] * rstd * w[i]);
    }
    const auto ref = reference(cons, x_norm, k, 32);
    for (float v : full) ASSERT_TRUE(std::isfinite(v));
    EXPECT_LT(test::rel_l2(full.data(), ref.data(), full.size()), 2e-3) << "K=" << k;
    for (int m : {1, 2, 5, 8, 9, 13, 32}) {
      for (const GemvReduce reduce : {GemvReduce::Auto, GemvReduce::Counters}) {
        ASSERT_EQ(0, std::memcmp(consume(m, reduce).data(), full.data(), static_cast<size_t>(m * n) * 4))
            << "K=" << k << " M=" << m << " reduce " << static_cast<int>(reduce);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GemvRowScaledTest, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return tensor_type_name(static_cast<uint32_t>(info.param)); });

// The first layer's input from the embedding lookup, and the LM head's after the GEMM route's
// last residual norm: the same f16(x w) bits as a GEMV producer's.
TEST(GemvRowScaledInputs, EmbeddingAndResidualNormWriteTheNormInput) {
  CHORUS_REQUIRE_GPU();
  std::mt19937 rng(83);
  const int64_t k = 1024, n_vocab = 96, n_groups = k / 64, stride = k + 8;
  const Problem table = make_problem(TensorType::Q8_0, k, n_vocab, rng);
  const auto w = normal_floats(static_cast<size_t>(k), rng, 1.0f);
  const auto d_w = to_device(w);
  const std::vector<int32_t> tokens = {7, 0, 95, 7, 31};
  const int rows = static_cast<int>(tokens.size());
  const auto tok = to_device(tokens);
  DeviceBuffer<float> x(static_cast<size_t>(rows * k)), ss(static_cast<size_t>(rows * n_groups));
  DeviceBuffer<__half> xw(static_cast<size_t>(rows * stride)), normed(static_cast<size_t>(rows * k));
  CHORUS_CUDA_CHECK(cudaMemset(xw.get(), 0xff, xw.size_bytes()));
  EmbedParams ep = embed_params(table, tok.get(), rows, x.get(), ss.get());
  ep.xw_h = xw.get();
  ep.xw_h_stride = static_cast<int32_t>(stride);
  ep.norm_w = d_w.get();
  launch_embed_rows(TensorType::Q8_0, ep, nullptr);
  const auto e = to_host(x);
  const auto want = xw_reference(e, w, rows, k, stride);
  const auto got = to_host_half(xw);
  for (int m = 0; m < rows; ++m) {
    ASSERT_EQ(0, std::memcmp(got.data() + m * stride, want.data() + m * stride, 2 * k)) << "embedding row " << m;
  }

  // The GEMM route's residual norm on the same rows (nothing added): its xw rows as well.
  CHORUS_CUDA_CHECK(cudaMemset(xw.get(), 0xff, xw.size_bytes()));
  ResidualNormParams rn;
  rn.x = x.get();
  rn.norm_w = d_w.get();
  rn.out = normed.get();
  rn.out_stride = static_cast<int32_t>(k);
  rn.xw_h = xw.get();
  rn.xw_h_stride = static_cast<int32_t>(stride);
  rn.n_embd = static_cast<int32_t>(k);
  rn.n_rows = rows;
  launch_residual_norm(rn, nullptr);
  const auto got_rn = to_host_half(xw);
  for (int m = 0; m < rows; ++m) {
    ASSERT_EQ(0, std::memcmp(got_rn.data() + m * stride, want.data() + m * stride, 2 * k)) << "residual norm row " << m;
  }
}

// A row-scaled input without its sums of squares, and a next-norm output without weights, are
// refused before any launch.
TEST(GemvRowScaledInputs, IncompleteParametersAreRefused) {
  CHORUS_REQUIRE_GPU();
  std::mt19937 rng(89);
  const Problem pr = make_problem(TensorType::Q8_0, 512, 64, rng);
  const Rig rig(pr, 1);
  DeviceBuffer<__half> x(static_cast<size_t>(512));
  DeviceBuffer<float> out(static_cast<size_t>(64));
  GemvParams p = rig.params(1);
  p.in.kind = GemvIn::HalfRowScaled;
  p.in.x = x.get();
  p.in.x_stride = 512;
  p.out.kind = GemvOut::Sum;
  p.out.out = out.get();
  p.out.out_stride = 64;
  EXPECT_THROW(launch_gemv(TensorType::Q8_0, p, nullptr), CudaError);
  p.in.kind = GemvIn::Half;
  p.out.xw_h = x.get();
  p.out.xw_h_stride = 512;
  EXPECT_THROW(launch_gemv(TensorType::Q8_0, p, nullptr), CudaError) << "xw rows on a Sum output";
}

}  // namespace
}  // namespace chorus::cuda
