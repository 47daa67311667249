// The L2 prefetch plan (cuda/l2_prefetch.h), checked on the host (no device needed): every
// byte ahead of a launch within the window is asked for exactly once, by the first launch
// whose window reaches it, never past the stream's end, in 16-byte multiples.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <map>
#include <vector>

#include "cuda/l2_prefetch.h"

namespace chorus::cuda {
namespace {

// Fake device addresses: span k starts at base + k * 1 GiB, so ranges map back to (span, offset).
const uint8_t* at(int span, int64_t offset) {
  return reinterpret_cast<const uint8_t*>(uintptr_t{0x100000000} + uintptr_t(span) * (uintptr_t{1} << 30) + offset);
}

struct Located {
  int span;
  int64_t offset;
};
Located locate(const uint8_t* p) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p) - uintptr_t{0x100000000};
  return {static_cast<int>(v >> 30), static_cast<int64_t>(v & ((uintptr_t{1} << 30) - 1))};
}

TEST(L2PrefetchPlan, EachByteAheadOnceWithinTheWindow) {
  // A layer-like stream: qkv (3 spans), attention (none), o, gate|up, down, twice, then a head.
  const std::vector<int64_t> sizes = {4096 * 160, 1024 * 160, 1024 * 224, 4096 * 144, 28672 * 144, 4096 * 224};
  std::vector<std::vector<WeightSpan>> launches;
  int span = 0;
  std::vector<int64_t> span_bytes;
  auto add = [&](std::vector<int64_t> bytes) {
    std::vector<WeightSpan> l;
    for (int64_t b : bytes) {
      l.push_back({at(span++, 0), b});
      span_bytes.push_back(b);
    }
    launches.push_back(l);
  };
  for (int layer = 0; layer < 2; ++layer) {
    add({sizes[0], sizes[1], sizes[2]});
    add({});
    add({sizes[3]});
    add({sizes[4]});
    add({sizes[5]});
  }
  add({128256 * 224});
  const int64_t window = 3 << 20;
  const std::vector<L2Prefetch> plan = plan_l2_prefetch(launches, window);
  ASSERT_EQ(plan.size(), launches.size());

  // Stream offsets of each span, and where each launch's own spans end.
  std::vector<int64_t> begin;
  int64_t total = 0;
  for (int64_t b : span_bytes) {
    begin.push_back(total);
    total += b;
  }
  std::vector<int64_t> consumed_end;
  int64_t c = 0;
  for (const auto& l : launches) {
    for (const auto& s : l) c += s.bytes;
    consumed_end.push_back(c);
  }

  std::map<int64_t, int64_t> asked;        // stream offset -> bytes
  std::map<int64_t, size_t> asked_by;      // stream offset -> launch
  for (size_t i = 0; i < plan.size(); ++i) {
    for (int r = 0; r < plan[i].n_ranges; ++r) {
      const Located loc = locate(plan[i].ptr[r]);
      ASSERT_LT(loc.span, static_cast<int>(span_bytes.size()));
      EXPECT_EQ(loc.offset % 16, 0);
      EXPECT_EQ(plan[i].bytes[r] % 16, 0u);
      EXPECT_GT(plan[i].bytes[r], 0u);
      EXPECT_LE(loc.offset + plan[i].bytes[r], span_bytes[static_cast<size_t>(loc.span)]) << "past its span";
      const int64_t from = begin[static_cast<size_t>(loc.span)] + loc.offset;
      EXPECT_GE(from, consumed_end[i]) << "launch " << i << " prefetches its own or earlier weights";
      EXPECT_LE(from + plan[i].bytes[r], consumed_end[i] + window) << "launch " << i << " beyond its window";
      EXPECT_TRUE(asked.emplace(from, plan[i].bytes[r]).second) << "asked twice";
      asked_by[from] = i;
    }
  }
  // No overlaps.
  int64_t prev_end = 0;
  for (const auto& [from, bytes] : asked) {
    EXPECT_GE(from, prev_end) << "overlapping ranges";
    prev_end = from + bytes;
  }
  // Coverage: when launch i starts, the window ahead of it, [consumed_end[i], +window), has
  // been asked for by launch i or earlier ones, unless launch i ran out of ranges.
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].n_ranges == L2Prefetch::kMaxRanges) continue;
    int64_t at_byte = consumed_end[i];
    const int64_t to = std::min(total, consumed_end[i] + window);
    for (const auto& [from, bytes] : asked) {
      if (asked_by[from] > i || from + bytes <= at_byte) continue;
      if (from > at_byte) break;
      at_byte = from + bytes;
    }
    EXPECT_GE(at_byte, to) << "launch " << i << ": window not covered from " << at_byte;
  }
  // Attention (launch 1) reads nothing and o's weights were asked for by qkv already:
  // it continues where qkv stopped.
  EXPECT_EQ(plan[0].n_ranges, 2);  // o, then the start of gate|up
  EXPECT_EQ(locate(plan[0].ptr[0]).span, 3);
}

TEST(L2PrefetchPlan, NoWindowPlansNothing) {
  const std::vector<std::vector<WeightSpan>> launches = {{{at(0, 0), 4096}}, {}, {{at(1, 0), 4096}}};
  for (const L2Prefetch& pf : plan_l2_prefetch(launches, 0)) EXPECT_EQ(pf.n_ranges, 0);
}

TEST(L2PrefetchPlan, RangesStopAtTheLimitAndTheNextLaunchContinues) {
  // Ten small spans ahead of launch 0 but only kMaxRanges ranges per launch.
  std::vector<std::vector<WeightSpan>> launches = {{{at(0, 0), 1024}}, {}};
  for (int k = 1; k <= 10; ++k) launches[1].push_back({at(k, 0), 1008 + 16 * k});
  launches.push_back({});
  const std::vector<L2Prefetch> plan = plan_l2_prefetch(launches, 1 << 20);
  ASSERT_EQ(plan[0].n_ranges, L2Prefetch::kMaxRanges);
  // Launch 1 reads spans 1..10 itself: nothing of them is left to fetch after launch 0.
  EXPECT_EQ(plan[1].n_ranges, 0);
  EXPECT_EQ(plan[2].n_ranges, 0);
}

TEST(L2PrefetchPlan, TailsShorterThan16BytesAreSkipped) {
  const std::vector<std::vector<WeightSpan>> launches = {{{at(0, 0), 64}}, {{at(1, 0), 100}, {at(2, 0), 48}}};
  const std::vector<L2Prefetch> plan = plan_l2_prefetch(launches, 1 << 20);
  ASSERT_EQ(plan[0].n_ranges, 2);
  EXPECT_EQ(plan[0].bytes[0], 96u);  // 100 rounded down
  EXPECT_EQ(locate(plan[0].ptr[1]).span, 2);
  EXPECT_EQ(plan[0].bytes[1], 48u);
}

}  // namespace
}  // namespace chorus::cuda
