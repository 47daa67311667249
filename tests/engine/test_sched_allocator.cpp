#include <gtest/gtest.h>

#include <set>

#include "engine/sched/kv_block_allocator.h"

namespace chorus {
namespace {

TEST(KvBlockAllocator, BlocksForTokensRoundsUp) {
  KvBlockAllocator a(8, 16);
  EXPECT_EQ(a.blocks_for_tokens(0), 0);
  EXPECT_EQ(a.blocks_for_tokens(1), 1);
  EXPECT_EQ(a.blocks_for_tokens(16), 1);
  EXPECT_EQ(a.blocks_for_tokens(17), 2);
  EXPECT_EQ(a.blocks_for_tokens(128), 8);
}

TEST(KvBlockAllocator, GrowsOnlyWhatIsNeeded) {
  KvBlockAllocator a(8, 16);
  std::vector<int32_t> table;
  ASSERT_TRUE(a.grow_to(table, 5));
  EXPECT_EQ(table.size(), 1u);
  ASSERT_TRUE(a.grow_to(table, 16));
  EXPECT_EQ(table.size(), 1u);
  ASSERT_TRUE(a.grow_to(table, 17));
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(a.n_blocks_used(), 2);
  EXPECT_EQ(a.n_blocks_free(), 6);
}

TEST(KvBlockAllocator, ExhaustionLeavesTableUnchanged) {
  KvBlockAllocator a(4, 16);
  std::vector<int32_t> t1, t2;
  ASSERT_TRUE(a.grow_to(t1, 48));
  EXPECT_FALSE(a.grow_to(t2, 32));
  EXPECT_TRUE(t2.empty());
  EXPECT_EQ(a.n_blocks_free(), 1);
  ASSERT_TRUE(a.grow_to(t2, 16));
  EXPECT_EQ(a.n_blocks_free(), 0);
  EXPECT_FALSE(a.grow_to(t1, 49));
  EXPECT_EQ(t1.size(), 3u);
}

TEST(KvBlockAllocator, ReleaseReturnsEveryBlockAndIdsAreUnique) {
  KvBlockAllocator a(10, 4);
  std::vector<std::vector<int32_t>> tables(3);
  ASSERT_TRUE(a.grow_to(tables[0], 12));
  ASSERT_TRUE(a.grow_to(tables[1], 9));
  ASSERT_TRUE(a.grow_to(tables[2], 13));
  std::set<int32_t> seen;
  for (const auto& t : tables) {
    for (int32_t b : t) {
      EXPECT_TRUE(seen.insert(b).second) << "block " << b << " handed out twice";
      EXPECT_GE(b, 0);
      EXPECT_LT(b, 10);
    }
  }
  EXPECT_EQ(a.n_blocks_free(), 0);
  a.release(tables[1]);
  EXPECT_TRUE(tables[1].empty());
  EXPECT_EQ(a.n_blocks_free(), 3);
  for (auto& t : tables) a.release(t);
  EXPECT_EQ(a.n_blocks_free(), 10);
}

}  // namespace
}  // namespace chorus
