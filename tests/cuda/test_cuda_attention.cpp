// Fused decode attention (attention_decode.cu) against a float64 CPU reference on fresh random
// inputs: rows of different lengths over a shuffled paged F16 cache, GQA, both RoPE styles,
// contexts from one position to several chunks. Checks the new token's K (rotated) and V in
// the cache (bit for bit as the prefill QKV kernel writes them), the attention output, and that
// a row's output does not depend on the other rows.
// Tolerance: f16 cache and output (relative 2^-11 each), f32 arithmetic: relative L2 2e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda/attention.h"
#include "cuda/device_memory.h"
#include "cuda/layer_ops.h"
#include "cuda/rope_table.h"
#include "engine/quant/fp16.h"
#include "tests/cuda/cuda_test_util.h"

namespace chorus::cuda {
namespace {

struct Shape {
  int n_heads, n_kv_heads, head_dim;
  RopeKind rope;
};

constexpr int kBlockTokens = 16, kMaxBlocks = 24;  // 384 positions per row at most

// Rotation of pair (i0, i1) of a head at pos, as ggml defines it (rope.cuh), in double.
void rope_ref(std::vector<double>& h, const RopeSpec& r, int pos) {
  const int hd = static_cast<int>(h.size());
  for (int j = 0; j < hd / 2; ++j) {
    int i0, i1, freq;
    if (r.kind == RopeKind::Normal) { i0 = 2 * j; i1 = i0 + 1; freq = i0 < r.rope_dim ? j : -1; }
    else if (j < r.rope_dim / 2) { i0 = j; i1 = j + r.rope_dim / 2; freq = j; }
    else { i0 = r.rope_dim + 2 * (j - r.rope_dim / 2); i1 = i0 + 1; freq = -1; }
    if (freq < 0) continue;
    const double th = pos * std::pow(static_cast<double>(r.base), -2.0 * freq / r.rope_dim);
    const double a = h[i0], b = h[i1];
    h[i0] = a * std::cos(th) - b * std::sin(th);
    h[i1] = a * std::sin(th) + b * std::cos(th);
  }
}

class DecodeAttentionTest : public ::testing::TestWithParam<Shape> {};

TEST_P(DecodeAttentionTest, MatchesCpuReference) {
  CHORUS_REQUIRE_GPU();
  const Shape sh = GetParam();
  const int hd = sh.head_dim, group = sh.n_heads / sh.n_kv_heads;
  const int q_dim = sh.n_heads * hd, kv_dim = sh.n_kv_heads * hd, n_qkv = q_dim + 2 * kv_dim;
  const std::vector<int> lens = {1, 31, 32, 33, 100, 257, 384};
  const int rows = static_cast<int>(lens.size());
  const int n_blocks = rows * kMaxBlocks, max_chunks = kMaxBlocks * kBlockTokens / kAttnChunkTokens;
  std::mt19937 rng(static_cast<uint32_t>(17 + hd + group));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  RopeSpec rope;
  rope.kind = sh.rope;
  rope.rope_dim = hd;
  rope.base = 10000.0f;

  // Cache: random f16 everywhere; each row owns a shuffled set of blocks.
  const size_t cache_elems = static_cast<size_t>(n_blocks) * sh.n_kv_heads * kBlockTokens * hd;
  std::vector<uint16_t> k_cache(cache_elems), v_cache(cache_elems);
  for (auto& x : k_cache) x = quant::f32_to_fp16(nd(rng));
  for (auto& x : v_cache) x = quant::f32_to_fp16(nd(rng));
  std::vector<int32_t> blocks(static_cast<size_t>(n_blocks));
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);  // tables: rows * kMaxBlocks, in order
  std::vector<float> qkv(static_cast<size_t>(rows) * n_qkv);
  for (auto& x : qkv) x = nd(rng);
  auto offset = [&](int row, int pos, int kvh) {
    const int b = blocks[static_cast<size_t>(row * kMaxBlocks + pos / kBlockTokens)];
    return ((static_cast<size_t>(b) * sh.n_kv_heads + kvh) * kBlockTokens + pos % kBlockTokens) * hd;
  };

  DeviceBuffer<uint16_t> dk(cache_elems), dv(cache_elems);
  CHORUS_CUDA_CHECK(cudaMemcpy(dk.get(), k_cache.data(), dk.size_bytes(), cudaMemcpyHostToDevice));
  CHORUS_CUDA_CHECK(cudaMemcpy(dv.get(), v_cache.data(), dv.size_bytes(), cudaMemcpyHostToDevice));
  DeviceBuffer<float> dqkv(qkv.size());
  CHORUS_CUDA_CHECK(cudaMemcpy(dqkv.get(), qkv.data(), dqkv.size_bytes(), cudaMemcpyHostToDevice));
  DeviceBuffer<int32_t> dtables(blocks.size()), dlens(lens.size()), counters(static_cast<size_t>(rows) * sh.n_kv_heads);
  CHORUS_CUDA_CHECK(cudaMemcpy(dtables.get(), blocks.data(), dtables.size_bytes(), cudaMemcpyHostToDevice));
  CHORUS_CUDA_CHECK(cudaMemcpy(dlens.get(), lens.data(), dlens.size_bytes(), cudaMemcpyHostToDevice));
  CHORUS_CUDA_CHECK(cudaMemset(counters.get(), 0, counters.size_bytes()));
  DeviceBuffer<float> part_o(static_cast<size_t>(rows) * sh.n_heads * max_chunks * hd);
  DeviceBuffer<float> part_ml(static_cast<size_t>(rows) * sh.n_heads * max_chunks * 2);
  DeviceBuffer<uint16_t> out(static_cast<size_t>(rows) * q_dim);

  // Runs rows [r0, r0 + n) with grid_chunks chunk blocks per row and returns their outputs as
  // floats. Up to kAttnMaxClusterChunks chunks the blocks merge inside a cluster, past it
  // through the partial arrays and counters, by blocks of `per_block` consecutive chunks (0: the
  // launch's choice): a row must get the same bits every way.
  // rope_positions > 0: the rotations of positions [0, rope_positions) come from a table
  // (rope_table.h) built by the kernels' own function; later positions are computed.
  DeviceBuffer<float2> rope_cs(static_cast<size_t>(kMaxBlocks * kBlockTokens) * hd / 2);
  // row.warps >= 0: the row route (attention_row.cu) where the launch allows it, blocks of that
  // many warps (0: the launch's choice), each row in one block or (split 2, 4) over a cluster of
  // that many (fewer where the launch's blocks would not get a multiprocessor each), staging K
  // and V in kv_phases (0: the launch's choice); -1: the chunk blocks.
  struct RowRoute {
    int warps = -1;
    int split = 1;
    int kv_phases = 0;
  };
  auto run = [&](int r0, int n, int grid_chunks, int per_block = 1, int rope_positions = 0, RowRoute row = {}) {
    CHORUS_CUDA_CHECK(cudaMemset(out.get(), 0xff, out.size_bytes()));
    DecodeAttentionParams d;
    d.attn.k_cache = reinterpret_cast<__half*>(dk.get());
    d.attn.v_cache = reinterpret_cast<__half*>(dv.get());
    d.attn.block_tables = dtables.get() + r0 * kMaxBlocks;
    d.attn.max_blocks = kMaxBlocks;
    d.attn.block_tokens = kBlockTokens;
    d.attn.seq_lens = dlens.get() + r0;
    d.attn.n_heads = sh.n_heads;
    d.attn.n_kv_heads = sh.n_kv_heads;
    d.attn.head_dim = hd;
    d.attn.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    d.attn.max_chunks = max_chunks;
    d.attn.grid_chunks = grid_chunks;
    d.attn.part_o = part_o.get();
    d.attn.part_ml = part_ml.get();
    d.attn.out = reinterpret_cast<__half*>(out.get()) + static_cast<size_t>(r0) * q_dim;
    d.attn.out_stride = q_dim;
    d.attn.n_rows = n;
    d.qkv = dqkv.get() + static_cast<size_t>(r0) * n_qkv;
    d.qkv_stride = n_qkv;
    d.rope = rope;
    d.counters = counters.get();
    d.chunks_per_block = per_block;
    d.row_max_rows = row.warps >= 0 ? kAttnMaxRowsPerLaunch : 0;
    d.row_warps = row.warps;
    d.row_split_max_rows = row.split > 1 ? kAttnMaxRowsPerLaunch : 0;
    d.row_split_parts = row.split;
    d.row_kv_phases = row.kv_phases;
    if (rope_positions > 0) {
      launch_rope_table(rope, rope_positions, rope_cs.get(), nullptr);
      d.rope_cs = rope_cs.get();
      d.rope_cs_positions = rope_positions;
    }
    launch_attention_decode(d, nullptr);
    std::vector<uint16_t> h(static_cast<size_t>(n) * q_dim);
    CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
    CHORUS_CUDA_CHECK(cudaMemcpy(h.data(), out.get() + static_cast<size_t>(r0) * q_dim, h.size() * 2,
                                 cudaMemcpyDeviceToHost));
    std::vector<float> f(h.size());
    for (size_t i = 0; i < h.size(); ++i) f[i] = quant::fp16_to_f32(h[i]);
    return f;
  };
  ASSERT_GT(max_chunks, kAttnMaxClusterChunks);
  const std::vector<float> got = run(0, rows, max_chunks);  // the counter route

  // The new token's K (rotated) and V went into the cache.
  std::vector<uint16_t> k_after(cache_elems), v_after(cache_elems);
  CHORUS_CUDA_CHECK(cudaMemcpy(k_after.data(), dk.get(), dk.size_bytes(), cudaMemcpyDeviceToHost));
  CHORUS_CUDA_CHECK(cudaMemcpy(v_after.data(), dv.get(), dv.size_bytes(), cudaMemcpyDeviceToHost));
  std::vector<double> want(got.size());
  for (int r = 0; r < rows; ++r) {
    const int pos = lens[static_cast<size_t>(r)] - 1;
    const float* row = qkv.data() + static_cast<size_t>(r) * n_qkv;
    for (int kvh = 0; kvh < sh.n_kv_heads; ++kvh) {
      std::vector<double> k(row + q_dim + kvh * hd, row + q_dim + (kvh + 1) * hd);
      rope_ref(k, rope, pos);
      const size_t off = offset(r, pos, kvh);
      for (int i = 0; i < hd; ++i) {
        ASSERT_NEAR(quant::fp16_to_f32(k_after[off + i]), k[i], 2e-3 * std::fabs(k[i]) + 1e-5) << "K row " << r;
        ASSERT_EQ(v_after[off + i], quant::f32_to_fp16(row[q_dim + kv_dim + kvh * hd + i])) << "V row " << r;
      }
    }
    for (int h = 0; h < sh.n_heads; ++h) {
      std::vector<double> q(row + h * hd, row + (h + 1) * hd);
      rope_ref(q, rope, pos);
      const int kvh = h / group;
      std::vector<double> score(static_cast<size_t>(pos + 1));
      double mx = -1e300;
      for (int j = 0; j <= pos; ++j) {
        double s = 0;
        for (int i = 0; i < hd; ++i) s += q[i] * quant::fp16_to_f32(k_after[offset(r, j, kvh) + i]);
        score[j] = s / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, score[j]);
      }
      double l = 0;
      for (auto& s : score) { s = std::exp(s - mx); l += s; }
      for (int i = 0; i < hd; ++i) {
        double o = 0;
        for (int j = 0; j <= pos; ++j) o += score[j] * quant::fp16_to_f32(v_after[offset(r, j, kvh) + i]);
        want[static_cast<size_t>(r) * q_dim + h * hd + i] = o / l;
      }
    }
  }
  // A prompt's K/V come from the prefill QKV kernel, the generated tokens' from this one; both
  // rotate through rope.cuh and must write the same halves, or a sequence's cache would depend on
  // whether a token was prefilled or decoded.
  {
    DeviceBuffer<uint16_t> pk(cache_elems), pv(cache_elems);
    CHORUS_CUDA_CHECK(cudaMemcpy(pk.get(), k_cache.data(), pk.size_bytes(), cudaMemcpyHostToDevice));
    CHORUS_CUDA_CHECK(cudaMemcpy(pv.get(), v_cache.data(), pv.size_bytes(), cudaMemcpyHostToDevice));
    std::vector<int32_t> positions(lens.size());
    for (size_t r = 0; r < lens.size(); ++r) positions[r] = lens[r] - 1;
    DeviceBuffer<int32_t> dpos(positions.size());
    CHORUS_CUDA_CHECK(cudaMemcpy(dpos.get(), positions.data(), dpos.size_bytes(), cudaMemcpyHostToDevice));
    DeviceBuffer<float> q_out(static_cast<size_t>(rows) * q_dim);
    QkvRopeParams qp;
    qp.qkv = Partials{dqkv.get(), 1, 0, n_qkv, 0};
    qp.positions = dpos.get();
    qp.block_tables = dtables.get();
    qp.max_blocks = kMaxBlocks;
    qp.block_tokens = kBlockTokens;
    qp.k_cache = reinterpret_cast<__half*>(pk.get());
    qp.v_cache = reinterpret_cast<__half*>(pv.get());
    qp.q_out = q_out.get();
    qp.n_heads = sh.n_heads;
    qp.n_kv_heads = sh.n_kv_heads;
    qp.head_dim = hd;
    qp.rope = rope;
    qp.n_rows = rows;
    launch_qkv_rope(qp, nullptr);
    CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<uint16_t> k_pre(cache_elems), v_pre(cache_elems);
    CHORUS_CUDA_CHECK(cudaMemcpy(k_pre.data(), pk.get(), pk.size_bytes(), cudaMemcpyDeviceToHost));
    CHORUS_CUDA_CHECK(cudaMemcpy(v_pre.data(), pv.get(), pv.size_bytes(), cudaMemcpyDeviceToHost));
    ASSERT_EQ(0, std::memcmp(k_pre.data(), k_after.data(), k_pre.size() * 2)) << "K: prefill and decode differ";
    ASSERT_EQ(0, std::memcmp(v_pre.data(), v_after.data(), v_pre.size() * 2)) << "V: prefill and decode differ";
  }

  for (float v : got) ASSERT_TRUE(std::isfinite(v)) << "unwritten or non-finite output";
  EXPECT_LT(test::rel_l2(got.data(), want.data(), got.size()), 2e-3);

  // Rows alone or in other company give the same bits (the K/V rewrite is idempotent). Alone,
  // a row launches the chunks its length needs rounded up to a power of two, as the backend
  // does: the short rows then merge in a cluster (of 1, 2 or 4 blocks), the long ones not.
  for (int r = 0; r < rows; ++r) {
    const int needed = (lens[static_cast<size_t>(r)] + kAttnChunkTokens - 1) / kAttnChunkTokens;
    int grid = 1;
    while (grid < needed) grid *= 2;
    const std::vector<float> alone = run(r, 1, grid);
    ASSERT_EQ(0, std::memcmp(alone.data(), got.data() + static_cast<size_t>(r) * q_dim, alone.size() * 4))
        << "row " << r << " alone, " << grid << " chunk blocks";
  }
  // The five short rows together in clusters of 8 blocks (inactive chunk blocks included).
  const std::vector<float> short_rows = run(0, 5, kAttnMaxClusterChunks);
  EXPECT_EQ(0, std::memcmp(short_rows.data(), got.data(), short_rows.size() * 4)) << "rows 0-4 in clusters of 8";
  EXPECT_EQ(0, std::memcmp(run(0, rows, max_chunks).data(), got.data(), got.size() * 4)) << "second launch (counters reset)";
  // The row route: one block per (row, kv head), of several warp counts (items shared unevenly
  // among the warps at 7; more warps than items at 24; 0: the launch's choice), alone and
  // together; a launch whose rows need more chunks than a cluster takes takes the chunk blocks.
  // Split over a cluster of two or four: rows of one chunk leave the other blocks without chunks.
  // K and V staged together (1), or V after the scores in K's place (2).
  for (int phases : {1, 2}) {
    for (int split : {1, 2, 4}) {
      for (int warps : {4, 7, 16, 24, 0}) {
        EXPECT_EQ(0, std::memcmp(run(0, 5, kAttnMaxClusterChunks, 1, 0, {warps, split, phases}).data(), got.data(),
                                 5 * q_dim * 4))
            << "rows 0-4 as row blocks of " << warps << " warps, split " << split << ", " << phases << " phases";
      }
      for (int r = 0; r < 5; ++r) {
        int grid = 1;
        while (grid * kAttnChunkTokens < lens[static_cast<size_t>(r)]) grid *= 2;
        EXPECT_EQ(0, std::memcmp(run(r, 1, grid, 1, 0, {16, split, phases}).data(),
                                 got.data() + static_cast<size_t>(r) * q_dim, q_dim * 4))
            << "row " << r << " alone as row blocks, split " << split << ", " << phases << " phases";
      }
    }
  }
  EXPECT_EQ(0, std::memcmp(run(0, rows, max_chunks, 1, 0, {16}).data(), got.data(), got.size() * 4))
      << "row route asked for rows past its chunks";
  for (int phases : {1, 2}) {  // from the original cache: the row blocks write the new token's K and V as the chunk blocks do
    for (int split : {1, 2, 4}) {
      CHORUS_CUDA_CHECK(cudaMemcpy(dk.get(), k_cache.data(), dk.size_bytes(), cudaMemcpyHostToDevice));
      CHORUS_CUDA_CHECK(cudaMemcpy(dv.get(), v_cache.data(), dv.size_bytes(), cudaMemcpyHostToDevice));
      EXPECT_EQ(0, std::memcmp(run(0, 5, kAttnMaxClusterChunks, 1, 200, {16, split, phases}).data(), got.data(),
                               5 * q_dim * 4))
          << "rows 0-4 as row blocks from the original cache, rotations from a table, split " << split << ", "
          << phases << " phases";
      run(5, 2, max_chunks);
      std::vector<uint16_t> k_row(cache_elems), v_row(cache_elems);
      CHORUS_CUDA_CHECK(cudaMemcpy(k_row.data(), dk.get(), dk.size_bytes(), cudaMemcpyDeviceToHost));
      CHORUS_CUDA_CHECK(cudaMemcpy(v_row.data(), dv.get(), dv.size_bytes(), cudaMemcpyDeviceToHost));
      EXPECT_EQ(0, std::memcmp(k_row.data(), k_after.data(), k_row.size() * 2))
          << "K written by the row blocks, split " << split << ", " << phases << " phases";
      EXPECT_EQ(0, std::memcmp(v_row.data(), v_after.data(), v_row.size() * 2))
          << "V written by the row blocks, split " << split << ", " << phases << " phases";
    }
  }
  // Several chunks per block (a block whose first chunk holds the new token, blocks with fewer
  // chunks than the others, rows shorter than a block, a row in one block), and the launch's
  // choice.
  for (int per_block : {2, 3, 5, max_chunks, 0}) {
    EXPECT_EQ(0, std::memcmp(run(0, rows, max_chunks, per_block).data(), got.data(), got.size() * 4))
        << per_block << " chunks per block";
  }
  // The rotations read from a table (the backend's route) instead of computed: the same output
  // and the same K halves in the cache. The 200-position table covers rows 0-4 only, so the
  // last two rows compute theirs in the same launch.
  for (int positions : {kMaxBlocks * kBlockTokens, 200}) {
    EXPECT_EQ(0, std::memcmp(run(0, rows, max_chunks, 1, positions).data(), got.data(), got.size() * 4))
        << "rotations of " << positions << " positions from a table";
    EXPECT_EQ(0, std::memcmp(run(0, 5, kAttnMaxClusterChunks, 1, positions).data(), got.data(), 5 * q_dim * 4))
        << "rows 0-4 in clusters, rotations from a table of " << positions;
    std::vector<uint16_t> k_table(cache_elems);
    CHORUS_CUDA_CHECK(cudaMemcpy(k_table.data(), dk.get(), dk.size_bytes(), cudaMemcpyDeviceToHost));
    EXPECT_EQ(0, std::memcmp(k_table.data(), k_after.data(), k_table.size() * 2)) << "K from table rotations";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DecodeAttentionTest,
                         // d36: a head width that is not a multiple of 8 halves, so the
                         // decode kernel stages the cached K/V in 4-byte pieces. h16_kv2_d32:
                         // two heads per warp, P.V in 8 groups of 4 lanes; h8_kv1_d256: two
                         // heads per warp, 4 dimension pairs per lane.
                         ::testing::Values(Shape{32, 8, 128, RopeKind::Normal}, Shape{8, 2, 64, RopeKind::Neox},
                                           Shape{9, 3, 64, RopeKind::Normal}, Shape{4, 4, 128, RopeKind::Neox},
                                           Shape{6, 2, 36, RopeKind::Normal}, Shape{16, 2, 32, RopeKind::Neox},
                                           Shape{8, 1, 256, RopeKind::Normal}),
                         [](const auto& info) {
                           const Shape& s = info.param;
                           std::string name = "h";
                           name += std::to_string(s.n_heads);
                           name += "_kv";
                           name += std::to_string(s.n_kv_heads);
                           name += "_d";
                           name += std::to_string(s.head_dim);
                           name += s.rope == RopeKind::Neox ? "_neox" : "_normal";
                           return name;
                         });

}  // namespace
}  // namespace chorus::cuda
