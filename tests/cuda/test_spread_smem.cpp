// The shared-memory search behind CudaTuning::gemv_spread (cuda/spread_smem.h), against a
// model of the occupancy (host only, no device needed).
#include <gtest/gtest.h>

#include <algorithm>

#include "cuda/spread_smem.h"

namespace chorus::cuda {
namespace {

// A multiprocessor of 228 KB of shared memory (1 KB reserved a block) and room for
// `reg_blocks` blocks by their registers, as the occupancy calculator counts them.
struct ModelSm {
  int reg_blocks = 4;
  int calls = 0;
  int operator()(size_t smem_bytes) {
    ++calls;
    return std::min<int>(reg_blocks, static_cast<int>(228 * 1024 / (smem_bytes + 1024)));
  }
};

TEST(SpreadCap, IsTheBlocksAMultiprocessorWhenSpreadEvenly) {
  EXPECT_EQ(spread_cap(128, 132), 1);  // the 1B's gate|up past 8 rows
  EXPECT_EQ(spread_cap(132, 132), 1);
  EXPECT_EQ(spread_cap(133, 132), 2);
  EXPECT_EQ(spread_cap(224, 132), 2);  // the 8B's gate|up past 8 rows
  EXPECT_EQ(spread_cap(448, 132), 4);
  EXPECT_EQ(spread_cap(0, 132), 1);
  EXPECT_EQ(spread_cap(10, 0), 1);  // no multiprocessor count: no padding asked beyond one block
}

TEST(LeastSmemForCap, KeepsTheBytesWhereTheCapAlreadyHolds) {
  ModelSm sm{2};
  EXPECT_EQ(least_smem_for_cap(sm, 50 * 1024, 220 * 1024, 2), size_t{50 * 1024});
  EXPECT_EQ(sm.calls, 1);
  EXPECT_EQ(least_smem_for_cap(sm, 50 * 1024, 220 * 1024, 3), size_t{50 * 1024});
}

TEST(LeastSmemForCap, FindsTheFewestBytesThatHoldTheCap) {
  for (const int cap : {1, 2, 3}) {
    for (const size_t smem : {size_t{16 * 1024}, size_t{40 * 1024 + 512}, size_t{50 * 1024}}) {
      ModelSm sm{4};
      const size_t bytes = least_smem_for_cap(sm, smem, 220 * 1024, cap);
      SCOPED_TRACE(testing::Message() << "cap " << cap << ", from " << smem << " bytes: " << bytes);
      EXPECT_LE(sm(bytes), cap);
      EXPECT_GE(bytes, smem);
      EXPECT_GT(sm(bytes - 128), cap) << "more than 128 bytes above the least";
      EXPECT_EQ(bytes % 16, 0u);
      EXPECT_LT(sm.calls, 40) << "a bisection, not a scan";
    }
  }
}

TEST(LeastSmemForCap, GivesTheMostBytesWhereNothingHoldsTheCap) {
  ModelSm sm{4};
  // At 60 KB the model still fits three blocks, so a cap of two cannot be met below it.
  EXPECT_EQ(least_smem_for_cap(sm, 16 * 1024, 60 * 1024, 2), size_t{60 * 1024});
}

}  // namespace
}  // namespace chorus::cuda
