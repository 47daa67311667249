// The GEMV's fused input and output stages (gemv.h) against CPU references on fresh random
// data: RMSNorm of f32 residual rows in front; split reduction + bias, residual add with sums
// of squares, SwiGLU of an interleaved gate/up pair, and logits with per-block argmax behind.
// Each is also checked for batch invariance (bit-identical rows for every M) and for leaving
// its split counters at zero (a second launch gives the same bits).
// Tolerances: f16 activations and weights (relative 2^-11 each), f32 accumulation: relative
// L2 error bound 2e-3; sums of squares recomputed from the device's own residual rows: 1e-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "cuda/layer_ops.h"
#include "tests/cuda/gemv_test_util.h"

namespace chorus::cuda {
namespace {

using namespace test;

const TensorType kFusedTypes[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::F16};

// Residual rows [32][k], their sums of squares per 64 columns, and norm weights.
struct NormInput {
  std::vector<float> resid, ss, w;
  int64_t k = 0, n_groups = 0;
  DeviceBuffer<float> d_resid, d_ss, d_w;
  // w_scale keeps products of large random weights inside f16 where the output is f16.
  NormInput(int64_t k_, std::mt19937& rng, float w_scale = 1.0f) : k(k_), n_groups((k_ + 63) / 64) {
    resid = normal_floats(static_cast<size_t>(32 * k), rng);
    w = normal_floats(static_cast<size_t>(k), rng, 1.0f);
    for (auto& v : w) v *= w_scale;
    ss.assign(static_cast<size_t>(32 * n_groups), 0.0f);
    for (int m = 0; m < 32; ++m)
      for (int64_t i = 0; i < k; ++i) ss[m * n_groups + i / 64] += resid[m * k + i] * resid[m * k + i];
    d_resid = to_device(resid);
    d_ss = to_device(ss);
    d_w = to_device(w);
  }
  GemvInput input() const {
    GemvInput in;
    in.kind = GemvIn::NormF32;
    in.resid = d_resid.get();
    in.resid_stride = static_cast<int32_t>(k);
    in.ss = d_ss.get();
    in.ss_stride = static_cast<int32_t>(n_groups);
    in.norm_w = d_w.get();
    in.eps = 1e-5f;
    return in;
  }
  std::vector<float> normalized() const {  // [32][k], what the kernel feeds the product (before f16)
    std::vector<float> x(resid.size());
    for (int m = 0; m < 32; ++m) {
      double s = 0;
      for (int64_t g = 0; g < n_groups; ++g) s += ss[m * n_groups + g];
      const double rstd = 1.0 / std::sqrt(s / static_cast<double>(k) + 1e-5);
      for (int64_t i = 0; i < k; ++i) x[m * k + i] = static_cast<float>(resid[m * k + i] * rstd * w[i]);
    }
    return x;
  }
};

class GemvFusedTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(GemvFusedTest, NormalizedInputSumAndBias) {
  CHORUS_REQUIRE_GPU();
  const TensorType type = GetParam();
  std::mt19937 rng(31 + static_cast<int>(type));
  const int64_t k = 1536, n = 200;  // 6 tiles in 3 splits; rows not a multiple of 64
  const Problem pr = make_problem(type, k, n, rng);
  const NormInput ni(k, rng);
  const auto bias = normal_floats(static_cast<size_t>(n), rng);
  const auto d_bias = to_device(bias);
  const Rig rig(pr, 3);
  DeviceBuffer<float> out(static_cast<size_t>(32 * n));
  auto run = [&](int m, GemvReduce reduce = GemvReduce::Auto) {
    CHORUS_CUDA_CHECK(cudaMemset(out.get(), 0xff, out.size_bytes()));
    GemvParams p = rig.params(m);
    p.split.reduce = reduce;
    p.mats.bias[0] = d_bias.get();
    p.in = ni.input();
    p.out.kind = GemvOut::Sum;
    p.out.out = out.get();
    p.out.out_stride = static_cast<int32_t>(n);
    launch_gemv(type, p, nullptr);
    auto y = to_host(out);
    y.resize(static_cast<size_t>(m * n));
    return y;
  };
  const auto full = run(32);
  auto ref = reference(pr, ni.normalized(), k, 32);
  for (int m = 0; m < 32; ++m)
    for (int64_t c = 0; c < n; ++c) ref[m * n + c] += bias[c];
  for (float v : full) ASSERT_TRUE(std::isfinite(v));
  EXPECT_LT(test::rel_l2(full.data(), ref.data(), full.size()), 2e-3);
  EXPECT_EQ(0, std::memcmp(run(32).data(), full.data(), full.size() * 4)) << "second launch (counters reset)";
  for (int m : {1, 2, 5, 13}) {
    ASSERT_EQ(0, std::memcmp(run(m).data(), full.data(), static_cast<size_t>(m * n) * 4)) << "M=" << m;
  }
  // The 3 splits meet in a thread-block cluster by default; through global partials and the
  // last-block counter they must give the same bits (twice: the counters reset themselves).
  for (int m : {32, 32, 1}) {
    ASSERT_EQ(0, std::memcmp(run(m, GemvReduce::Counters).data(), full.data(), static_cast<size_t>(m * n) * 4))
        << "counter route, M=" << m;
  }
  EXPECT_EQ(0, std::memcmp(run(32, GemvReduce::Cluster).data(), full.data(), full.size() * 4)) << "cluster route";
}

// The decode step normalizes several rows once (launch_norm_rows) and hands the GEMV f16 rows,
// which it stages by cp.async; one row goes through the fused normalized input. A sequence's
// output must not depend on which route its step took, so the two must agree bit for bit,
// also with K not a multiple of the 256-column tile (the async staging zero-fills the tail),
// and with 4-tile splits, where more than 8 f16 rows go through the x ring (gemv.h) and the
// splits meet in a cluster.
TEST_P(GemvFusedTest, NormPassGivesTheFusedNormsBits) {
  CHORUS_REQUIRE_GPU();
  const TensorType type = GetParam();
  for (const int64_t k : {int64_t{1536}, int64_t{992}, int64_t{2048}}) {
    if (is_k_type(type) && k % 256 != 0) continue;  // K-quant rows are whole 256-column blocks
    std::mt19937 rng(57 + static_cast<int>(type) + static_cast<int>(k));
    const int64_t n = 136;
    const Problem pr = make_problem(type, k, n, rng);
    const NormInput ni(k, rng);
    const Rig rig(pr, 2);
    const int64_t h_stride = (k + 7) / 8 * 8;
    DeviceBuffer<uint16_t> h(static_cast<size_t>(32 * h_stride));
    DeviceBuffer<float> out(static_cast<size_t>(32 * n));
    auto run = [&](int m, bool pass) {
      CHORUS_CUDA_CHECK(cudaMemset(out.get(), 0xff, out.size_bytes()));
      GemvParams p = rig.params(m);
      p.in = ni.input();
      if (pass) {
        NormRowsParams np;
        np.in = p.in;
        np.n_cols = static_cast<int32_t>(k);
        np.n_rows = m;
        np.out = reinterpret_cast<__half*>(h.get());
        np.out_stride = static_cast<int32_t>(h_stride);
        launch_norm_rows(np, nullptr);
        p.in = GemvInput{};
        p.in.kind = GemvIn::Half;
        p.in.x = reinterpret_cast<const __half*>(h.get());
        p.in.x_stride = static_cast<int32_t>(h_stride);
        EXPECT_TRUE(gemv_x_async(p.in));
      }
      p.out.kind = GemvOut::Sum;
      p.out.out = out.get();
      p.out.out_stride = static_cast<int32_t>(n);
      launch_gemv(type, p, nullptr);
      auto y = to_host(out);
      y.resize(static_cast<size_t>(m * n));
      return y;
    };
    const auto fused = run(32, false);
    const auto ref = reference(pr, ni.normalized(), k, 32);
    EXPECT_LT(test::rel_l2(fused.data(), ref.data(), fused.size()), 2e-3) << "K=" << k;
    for (int m : {1, 3, 8, 32}) {
      const auto via_pass = run(m, true);
      ASSERT_EQ(0, std::memcmp(via_pass.data(), fused.data(), via_pass.size() * 4)) << "K=" << k << " M=" << m;
    }
  }
}

TEST_P(GemvFusedTest, ResidualAddAndSumsOfSquares) {
  CHORUS_REQUIRE_GPU();
  const TensorType type = GetParam();
  std::mt19937 rng(47 + static_cast<int>(type));
  const int64_t k = 1536, n = 320;  // n: the residual width, 5 groups of 64
  const Problem pr = make_problem(type, k, n, rng);
  const int64_t x_stride = k;
  const auto x_h = random_x_half(32, k, x_stride, rng);
  std::vector<float> x_f(x_h.size());
  for (size_t i = 0; i < x_h.size(); ++i) x_f[i] = quant::fp16_to_f32(x_h[i]);
  const auto x = to_device(x_h);
  const auto resid0 = normal_floats(static_cast<size_t>(32 * n), rng);
  const int64_t n_groups = n / 64;
  const Rig rig(pr, 3);
  DeviceBuffer<float> resid(resid0.size()), ss(static_cast<size_t>(32 * n_groups));
  auto run = [&](int m, std::vector<float>& ss_out, int32_t early = 0, int n_splits = 3) {
    CHORUS_CUDA_CHECK(cudaMemcpy(resid.get(), resid0.data(), resid.size_bytes(), cudaMemcpyHostToDevice));
    CHORUS_CUDA_CHECK(cudaMemset(ss.get(), 0xff, ss.size_bytes()));
    GemvParams p = rig.params(m);
    p.early_loads = early;
    if (n_splits == 1) {  // one block adds its own sums (and prefetches its residual rows)
      p.split.n_splits = 1;
      p.split.tiles_per_split = pr.dm.n_tiles;
    }
    p.in.x = reinterpret_cast<const __half*>(x.get());
    p.in.x_stride = static_cast<int32_t>(x_stride);
    p.out.kind = GemvOut::Residual;
    p.out.out = resid.get();
    p.out.out_stride = static_cast<int32_t>(n);
    p.out.ss = ss.get();
    p.out.ss_stride = static_cast<int32_t>(n_groups);
    launch_gemv(type, p, nullptr);
    ss_out = to_host(ss);
    auto r = to_host(resid);
    return r;
  };
  std::vector<float> ss_full;
  const auto full = run(32, ss_full);
  const auto prod = reference(pr, x_f, x_stride, 32);
  std::vector<double> want(full.size());
  std::vector<float> delta(full.size());
  for (size_t i = 0; i < full.size(); ++i) { want[i] = prod[i]; delta[i] = full[i] - resid0[i]; }
  EXPECT_LT(test::rel_l2(delta.data(), want.data(), delta.size()), 2e-3);
  for (int m = 0; m < 32; ++m)
    for (int64_t g = 0; g < n_groups; ++g) {
      double s = 0;
      for (int64_t i = 64 * g; i < 64 * g + 64; ++i) s += double(full[m * n + i]) * full[m * n + i];
      ASSERT_NEAR(ss_full[m * n_groups + g], s, 1e-5 * s) << "row " << m << " group " << g;
    }
  for (int m : {1, 7, 32}) {
    std::vector<float> ss_m;
    const auto part = run(m, ss_m);
    ASSERT_EQ(0, std::memcmp(part.data(), full.data(), static_cast<size_t>(m * n) * 4)) << "M=" << m;
    ASSERT_EQ(0, std::memcmp(ss_m.data(), ss_full.data(), static_cast<size_t>(m * n_groups) * 4)) << "M=" << m;
  }
  // Every block of the cluster adding and writing a share of the rows (kGemvSharedFinish)
  // instead of the first block all of them: the same bits, at one column group and past it.
  for (int m : {1, 8, 9, 13, 32}) {
    std::vector<float> ss_m;
    const auto shared = run(m, ss_m, kGemvSharedFinish);
    ASSERT_EQ(0, std::memcmp(shared.data(), full.data(), static_cast<size_t>(m * n) * 4)) << "shared, M=" << m;
    ASSERT_EQ(0, std::memcmp(ss_m.data(), ss_full.data(), static_cast<size_t>(m * n_groups) * 4)) << "shared, M=" << m;
  }
  // Up to 8 rows the adding block may prefetch its residual rows (kGemvEarlyResidual) instead
  // of loading them after the reduction: the same bits. The single split changes the summation
  // order, so it is compared with its own route without the prefetch.
  for (int m : {1, 2, 8}) {
    std::vector<float> ss_a, ss_b;
    const auto early = run(m, ss_a, kGemvEarlyResidual);
    ASSERT_EQ(0, std::memcmp(early.data(), full.data(), static_cast<size_t>(m * n) * 4)) << "prefetch, M=" << m;
    ASSERT_EQ(0, std::memcmp(ss_a.data(), ss_full.data(), static_cast<size_t>(m * n_groups) * 4)) << "prefetch, M=" << m;
    const auto one = run(m, ss_a, kGemvEarlyResidual, 1);
    const auto one_late = run(m, ss_b, 0, 1);
    ASSERT_EQ(0, std::memcmp(one.data(), one_late.data(), static_cast<size_t>(m * n) * 4)) << "one split, M=" << m;
    ASSERT_EQ(0, std::memcmp(ss_a.data(), ss_b.data(), static_cast<size_t>(m * n_groups) * 4)) << "one split, M=" << m;
    const std::vector<double> full_d(full.begin(), full.begin() + m * n);
    EXPECT_LT(test::rel_l2(one.data(), full_d.data(), full_d.size()), 1e-5) << "one split, M=" << m;
    // The splits pushed into the first block's shared memory (kGemvEarlyPush) instead of read
    // between two cluster barriers: the same bits, with and without the prefetch.
    for (const int32_t bits : {int32_t{kGemvEarlyPush}, kGemvEarlyResidual | kGemvEarlyPush}) {
      const auto pushed = run(m, ss_a, bits);
      ASSERT_EQ(0, std::memcmp(pushed.data(), full.data(), static_cast<size_t>(m * n) * 4)) << "push " << bits << ", M=" << m;
      ASSERT_EQ(0, std::memcmp(ss_a.data(), ss_full.data(), static_cast<size_t>(m * n_groups) * 4))
          << "push " << bits << ", M=" << m;
    }
  }
}

TEST_P(GemvFusedTest, SwigluOfInterleavedGateUp) {
  CHORUS_REQUIRE_GPU();
  const TensorType type = GetParam();
  std::mt19937 rng(53 + static_cast<int>(type));
  const int64_t k = 1024, n_ff = 200;  // n_ff not a multiple of 16: padded groups
  const Problem gate = make_problem(type, k, n_ff, rng), up = make_problem(type, k, n_ff, rng);
  TensorView g, u;
  g.type = u.type = type;
  g.ne0 = u.ne0 = k;
  g.ne1 = u.ne1 = n_ff;
  g.data = gate.raw.data();
  u.data = up.raw.data();
  Problem fused{type, k, 0, {}, {}, upload_gate_up(g, u)};
  const NormInput ni(k, rng, 0.05f);
  const Rig rig(fused, 2);
  DeviceBuffer<__half> out(static_cast<size_t>(32 * n_ff));
  auto run = [&](int m) {
    CHORUS_CUDA_CHECK(cudaMemset(out.get(), 0xff, out.size_bytes()));
    GemvParams p = rig.params(m);
    p.in = ni.input();
    p.out.kind = GemvOut::SwiGlu;
    p.out.out_h = out.get();
    p.out.out_h_stride = static_cast<int32_t>(n_ff);
    p.out.n_ff = static_cast<int32_t>(n_ff);
    launch_gemv(type, p, nullptr);
    std::vector<uint16_t> h(out.size());
    CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
    CHORUS_CUDA_CHECK(cudaMemcpy(h.data(), out.get(), out.size_bytes(), cudaMemcpyDeviceToHost));
    std::vector<float> f(static_cast<size_t>(m * n_ff));
    for (size_t i = 0; i < f.size(); ++i) f[i] = quant::fp16_to_f32(h[i]);
    return f;
  };
  const auto full = run(32);
  const auto x = ni.normalized();
  const auto gr = reference(gate, x, k, 32), ur = reference(up, x, k, 32);
  std::vector<double> ref(gr.size());
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = gr[i] / (1.0 + std::exp(-gr[i])) * ur[i];
  for (float v : full) ASSERT_TRUE(std::isfinite(v));
  EXPECT_LT(test::rel_l2(full.data(), ref.data(), full.size()), 3e-3);
  for (int m : {1, 9}) {
    ASSERT_EQ(0, std::memcmp(run(m).data(), full.data(), static_cast<size_t>(m * n_ff) * 4)) << "M=" << m;
  }
}

TEST_P(GemvFusedTest, LogitsAndBlockArgmax) {
  CHORUS_REQUIRE_GPU();
  const TensorType type = GetParam();
  std::mt19937 rng(61 + static_cast<int>(type));
  const int64_t k = 512, n = 1000;  // 16 row blocks, the last one partial
  const Problem pr = make_problem(type, k, n, rng);
  const NormInput ni(k, rng);
  const Rig rig(pr, 1);
  const int32_t n_blocks = static_cast<int32_t>((n + 63) / 64);
  DeviceBuffer<float> logits(static_cast<size_t>(32 * n)), best_v(static_cast<size_t>(n_blocks * 32));
  DeviceBuffer<int32_t> best_i(static_cast<size_t>(n_blocks * 32));
  GemvParams p = rig.params(32);
  p.in = ni.input();
  p.out.kind = GemvOut::Logits;
  p.out.out = logits.get();
  p.out.out_stride = static_cast<int32_t>(n);
  p.out.argmax_val = best_v.get();
  p.out.argmax_idx = best_i.get();
  launch_gemv(type, p, nullptr);
  const auto l = to_host(logits);
  const auto bv = to_host(best_v);
  const auto bi = to_host(best_i);
  const auto ref = reference(pr, ni.normalized(), k, 32);
  EXPECT_LT(test::rel_l2(l.data(), ref.data(), l.size()), 2e-3);
  for (int m = 0; m < 32; ++m) {
    const int64_t want = std::max_element(l.begin() + m * n, l.begin() + (m + 1) * n) - (l.begin() + m * n);
    float v = -FLT_MAX;
    int idx = -1;
    for (int b = 0; b < n_blocks; ++b) {
      if (bv[b * 32 + m] > v) { v = bv[b * 32 + m]; idx = bi[b * 32 + m]; }
    }
    ASSERT_EQ(idx, want) << "row " << m;
    ASSERT_EQ(v, l[m * n + want]);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GemvFusedTest, ::testing::ValuesIn(kFusedTypes),
                         [](const auto& info) { return tensor_type_name(static_cast<uint32_t>(info.param)); });

// A q4_k_m layer's q|k (Q4_K) and v (Q6_K) in one two-type launch (launch_gemv_pair) must give
// the bits of one launch per type, at every M, through the cluster and the counter routes, with
// a normalized input and with f16 rows; and the reference within the usual tolerance.
TEST(GemvPair, SameBitsAsOneLaunchPerType) {
  CHORUS_REQUIRE_GPU();
  ASSERT_TRUE(gemv_pair_supported(TensorType::Q4_K, TensorType::Q6_K));
  EXPECT_FALSE(gemv_pair_supported(TensorType::Q6_K, TensorType::Q4_K));
  std::mt19937 rng(83);
  const int64_t k = 1536;  // 6 tiles in 3 splits
  const Problem q = make_problem(TensorType::Q4_K, k, 200, rng), kk = make_problem(TensorType::Q4_K, k, 72, rng);
  const Problem v = make_problem(TensorType::Q6_K, k, 136, rng);
  const int64_t n = q.n + kk.n + v.n;
  const NormInput ni(k, rng);
  const auto x_h = random_x_half(32, k, k, rng);
  const auto d_x = to_device(x_h);
  const int32_t n_splits = 3, tiles = (q.dm.n_tiles + n_splits - 1) / n_splits;
  DeviceBuffer<float> partials(static_cast<size_t>(n_splits) * 32 * n), out(static_cast<size_t>(32 * n));
  DeviceBuffer<int32_t> counters(static_cast<size_t>(n / 64 + 8));
  CHORUS_CUDA_CHECK(cudaMemset(counters.get(), 0, counters.size_bytes()));
  const Problem* mats[3] = {&q, &kk, &v};
  // Matrices [first, last) from column col, as one launch of theirs would take them.
  auto params = [&](int m, bool norm, GemvReduce reduce, int first, int last, int32_t col) {
    GemvParams p;
    p.mats.n_tiles = q.dm.n_tiles;
    p.mats.record_bytes = mats[first]->dm.record_bytes;
    p.mats.k_elems = static_cast<int32_t>(k);
    for (int i = first; i < last; ++i) {
      const int j = p.mats.n_mats++;
      p.mats.w[j] = mats[i]->dm.ptr();
      p.mats.n_rows[j] = static_cast<int32_t>(mats[i]->n);
      p.mats.col_begin[j] = col;
      col += static_cast<int32_t>(mats[i]->n);
    }
    if (norm) {
      p.in = ni.input();
    } else {
      p.in.x = reinterpret_cast<const __half*>(d_x.get());
      p.in.x_stride = static_cast<int32_t>(k);
    }
    p.out.kind = GemvOut::Sum;
    p.out.out = out.get();
    p.out.out_stride = static_cast<int32_t>(n);
    p.n_seqs = m;
    p.split = GemvSplit{n_splits, tiles, reduce, partials.get(), int64_t{32} * n, static_cast<int32_t>(n), counters.get()};
    return p;
  };
  auto poisoned = [&] { CHORUS_CUDA_CHECK(cudaMemset(out.get(), 0xff, out.size_bytes())); };
  for (const bool norm : {true, false}) {
    for (const GemvReduce reduce : {GemvReduce::Auto, GemvReduce::Counters}) {
      for (const int m : {1, 2, 8, 13, 32}) {
        poisoned();
        launch_gemv(TensorType::Q4_K, params(m, norm, reduce, 0, 2, 0), nullptr);
        launch_gemv(TensorType::Q6_K, params(m, norm, reduce, 2, 3, static_cast<int32_t>(q.n + kk.n)), nullptr);
        auto apart = to_host(out);
        poisoned();
        GemvParams p = params(m, norm, reduce, 0, 3, 0);
        p.mats.n_mats_a = 2;
        p.mats.record_bytes_b = v.dm.record_bytes;
        launch_gemv_pair(TensorType::Q4_K, TensorType::Q6_K, p, nullptr);
        auto together = to_host(out);
        apart.resize(static_cast<size_t>(m * n));
        together.resize(apart.size());
        // The cluster's other routes to the same sums (GemvEarly bits): the same bits.
        struct Route {
          int32_t bits;
          int max_m;
          const char* name;
        };
        for (const Route route : {Route{kGemvEarlyPush, 8, "pushed sums"}, Route{kGemvSharedFinish, 32, "shared finish"}}) {
          if (reduce != GemvReduce::Auto || m > route.max_m) continue;
          poisoned();
          p.early_loads = route.bits;
          launch_gemv_pair(TensorType::Q4_K, TensorType::Q6_K, p, nullptr);
          auto other = to_host(out);
          other.resize(apart.size());
          ASSERT_EQ(0, std::memcmp(apart.data(), other.data(), apart.size() * 4))
              << (norm ? "normalized" : "f16") << " input, " << route.name << ", M=" << m;
        }
        for (float y : together) ASSERT_TRUE(std::isfinite(y));
        ASSERT_EQ(0, std::memcmp(apart.data(), together.data(), apart.size() * 4))
            << (norm ? "normalized" : "f16") << " input, " << (reduce == GemvReduce::Counters ? "counters" : "cluster")
            << ", M=" << m;
        if (m == 32 && !norm) {  // against the reference: columns of q, k, v side by side
          std::vector<float> x_f(x_h.size());
          for (size_t i = 0; i < x_h.size(); ++i) x_f[i] = quant::fp16_to_f32(x_h[i]);
          std::vector<double> want(together.size());
          int64_t c0 = 0;
          for (const Problem* pm : mats) {
            const auto ref = reference(*pm, x_f, k, 32);
            for (int r = 0; r < 32; ++r)
              for (int64_t c = 0; c < pm->n; ++c) want[r * n + c0 + c] = ref[r * pm->n + c];
            c0 += pm->n;
          }
          EXPECT_LT(test::rel_l2(together.data(), want.data(), want.size()), 2e-3);
        }
      }
    }
  }
}

// The choices the decode step measured best (perf-notes v17, 132 multiprocessors): the fewest
// splits giving 6 warps per multiprocessor, so that no launch needs a second wave.
TEST(GemvSplits, ChoicesForTheBenchmarkShapes) {
  auto splits = [](int64_t rows, int32_t tiles) { return gemv_choose_splits(rows, tiles, 132).n_splits; };
  // llama3-8b: q|k|v, output, gate|up, down -> 4.4.1.4
  EXPECT_EQ(splits(6144, 16), 4);
  EXPECT_EQ(splits(4096, 16), 4);
  EXPECT_EQ(splits(28672, 16), 1);
  EXPECT_EQ(splits(4096, 56), 4);
  // llama3.2-1b -> 4.4.1.8 (q|k|v and output at the 2-tiles-a-split floor)
  EXPECT_EQ(splits(3072, 8), 4);
  EXPECT_EQ(splits(2048, 8), 4);
  EXPECT_EQ(splits(16384, 8), 1);
  EXPECT_EQ(splits(2048, 32), 8);
}

TEST(GemvSplits, DependOnShapeOnlyAndCoverK) {
  for (int64_t rows : {256, 4096, 6144, 28672, 128256}) {
    for (int32_t tiles : {1, 2, 5, 8, 16, 56}) {
      const GemvSplitShape s = gemv_choose_splits(rows, tiles, 132);
      EXPECT_GE(s.n_splits, 1);
      EXPECT_LE(s.n_splits, 16);
      EXPECT_GE(int64_t{s.n_splits} * s.tiles_per_split, tiles);
      EXPECT_LT(int64_t{s.n_splits - 1} * s.tiles_per_split, tiles) << "an empty split";
      for (int32_t forced : {0, 1, 3, 8, 16, 40}) {  // the measurement override
        const GemvSplitShape f = gemv_split_shape(forced, tiles);
        EXPECT_GE(f.n_splits, 1);
        EXPECT_LE(f.n_splits, std::min(16, std::max(1, forced)));
        EXPECT_GE(int64_t{f.n_splits} * f.tiles_per_split, tiles);
        EXPECT_LT(int64_t{f.n_splits - 1} * f.tiles_per_split, tiles) << "an empty split, forced " << forced;
      }
    }
  }
}

}  // namespace
}  // namespace chorus::cuda
