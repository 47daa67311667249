// CHORUS_CUDA_TUNING's text form (host only, no device needed).
#include <gtest/gtest.h>

#include "cuda/cuda_tuning.h"

namespace chorus::cuda {
namespace {

TEST(CudaTuningText, EmptySpecKeepsBase) {
  CudaTuning base;
  base.gemv_pair_max_rows = 7;
  auto t = parse_cuda_tuning("", base);
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(format_cuda_tuning(*t), format_cuda_tuning(base));
}

TEST(CudaTuningText, SetsNamedFieldsOnly) {
  const CudaTuning base;
  auto t = parse_cuda_tuning("attn_chunks_per_block=0,gemv_early_loads=1,,gemv_pair_max_rows=32,gemv_splits=4.8.1.16", base);
  ASSERT_TRUE(t) << t.message();
  EXPECT_EQ(t->attn_chunks_per_block, 0);
  EXPECT_EQ(t->gemv_early_loads, 1);
  EXPECT_EQ(t->gemv_pair_max_rows, 32);
  EXPECT_EQ(t->gemv_splits.qkv, 4);
  EXPECT_EQ(t->gemv_splits.o, 8);
  EXPECT_EQ(t->gemv_splits.ffn_up, 1);
  EXPECT_EQ(t->gemv_splits.down, 16);
  EXPECT_EQ(t->attn_cluster_max_rows, base.attn_cluster_max_rows);
  EXPECT_EQ(t->gemv_x_budget_bytes, base.gemv_x_budget_bytes);
}

TEST(CudaTuningText, FormatParsesBackToTheSameSetting) {
  CudaTuning a;
  a.attn_cluster_max_rows = 3;
  a.attn_chunks_per_block = 5;
  a.attn_row_max_rows = 7;
  a.attn_row_warps = 12;
  a.attn_row_split_max_rows = 2;
  a.attn_row_split_parts = 4;
  a.attn_row_kv_phases = 2;
  a.gemv_x_budget_bytes = 16384;
  a.gemv_early_loads = 1;
  a.gemv_pair_max_rows = 9;
  a.gemv_splits = {2, 4, 1, 8};
  a.gemv_spread = {0, 17, 12, 33};
  a.gemm_ref_rows = 128;
  a.norm_pass_min_rows = 1;
  a.norm_from_producer = 0;
  const std::string text = format_cuda_tuning(a);
  auto b = parse_cuda_tuning(text, CudaTuning{});
  ASSERT_TRUE(b) << b.message();
  EXPECT_EQ(format_cuda_tuning(*b), text);
  EXPECT_EQ(b->gemv_splits.down, 8);
  EXPECT_EQ(b->gemv_spread.o, 17);
  EXPECT_EQ(b->gemv_spread.ffn_up, 12);
  EXPECT_EQ(b->gemv_spread.down, 33);
  EXPECT_EQ(b->gemv_x_budget_bytes, 16384);
  EXPECT_EQ(b->gemm_ref_rows, 128);
  EXPECT_EQ(b->norm_pass_min_rows, 1);
  EXPECT_EQ(b->norm_from_producer, 0);
  EXPECT_EQ(b->attn_row_max_rows, 7);
  EXPECT_EQ(b->attn_row_warps, 12);
  EXPECT_EQ(b->attn_row_split_max_rows, 2);
  EXPECT_EQ(b->attn_row_split_parts, 4);
  EXPECT_EQ(b->attn_row_kv_phases, 2);
}

TEST(CudaTuningText, BadInputIsAnErrorThatNamesIt) {
  const CudaTuning base;
  struct Case {
    const char* spec;
    const char* names;  // the message must contain this
  };
  const Case cases[] = {
      {"attn_chunks=2", "unknown key 'attn_chunks'"},
      {"gemv_early_loads", "not key=value"},
      {"gemv_pair_max_rows=-1", "non-negative integer, not '-1'"},
      {"gemv_pair_max_rows=8x", "not '8x'"},
      {"gemv_pair_max_rows=", "not ''"},
      {"gemv_pair_max_rows=99999999999", "not '99999999999'"},
      {"gemv_splits=4.8.1", "Q.O.U.D"},
      {"gemv_splits=4.8.1.8.2", "Q.O.U.D"},
      {"gemv_splits=4..1.8", "Q.O.U.D"},
      {"gemv_spread=9", "gemv_spread takes four counts Q.O.U.D"},
      {"gemv_spread=0.0.-9.0", "gemv_spread takes four counts"},
  };
  for (const Case& c : cases) {
    auto t = parse_cuda_tuning(c.spec, base);
    ASSERT_FALSE(t) << c.spec;
    EXPECT_NE(t.message().find(c.names), std::string::npos) << c.spec << ": " << t.message();
  }
}

}  // namespace
}  // namespace chorus::cuda
