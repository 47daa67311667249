#include <gtest/gtest.h>

#include "engine/sched/stop_matcher.h"

namespace chorus {
namespace {

struct Fed {
  std::string delivered;
  bool stopped = false;
};

Fed feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  Fed f;
  for (const auto& p : pieces) {
    if (m.push(p, f.delivered) == StopMatcher::State::Stopped) {
      f.stopped = true;
      return f;
    }
  }
  m.flush(f.delivered);
  return f;
}

TEST(StopMatcher, NoStopStringsPassesEverythingThrough) {
  StopMatcher m;
  std::string out;
  EXPECT_EQ(m.push("hello", out), StopMatcher::State::Continue);
  EXPECT_EQ(out, "hello");
}

TEST(StopMatcher, StopSplitAcrossTokensIsFoundAndNotDelivered) {
  StopMatcher m({"</end>"});
  const Fed f = feed(m, {"abc<", "/e", "nd", ">tail"});
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.delivered, "abc");
}

TEST(StopMatcher, PossiblePrefixIsHeldBackUntilResolved) {
  StopMatcher m({"STOP"});
  std::string out;
  EXPECT_EQ(m.push("xyST", out), StopMatcher::State::Continue);
  EXPECT_EQ(out, "xy");  // "ST" might start "STOP"
  EXPECT_EQ(m.push("O", out), StopMatcher::State::Continue);
  EXPECT_EQ(out, "xy");
  EXPECT_EQ(m.push("x", out), StopMatcher::State::Continue);
  EXPECT_EQ(out, "xySTOx");  // resolved: not a stop after all
}

TEST(StopMatcher, FlushReleasesHeldTextAtTheEnd) {
  StopMatcher m({"STOP"});
  const Fed f = feed(m, {"ab", "STO"});
  EXPECT_FALSE(f.stopped);
  EXPECT_EQ(f.delivered, "abSTO");
}

TEST(StopMatcher, EarliestOfSeveralStopStringsWins) {
  StopMatcher m({"world", "lo w"});
  const Fed f = feed(m, {"hel", "lo world"});
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.delivered, "hel");
}

TEST(StopMatcher, OverlappingFalseStartThenRealStop) {
  StopMatcher m({"aab"});
  const Fed f = feed(m, {"a", "a", "a", "b", "c"});
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.delivered, "a");
}

TEST(StopMatcher, StopInsideOneTokenDropsTheRest) {
  StopMatcher m({"\n\n"});
  const Fed f = feed(m, {"line one\n\nline two"});
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.delivered, "line one");
}

TEST(StopMatcher, MultiByteStopString) {
  StopMatcher m({"\xe2\x86\x92"});  // U+2192
  const Fed f = feed(m, {"a\xe2", "\x86", "\x92z"});
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.delivered, "a");
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
  StopMatcher m({"", ""});
  EXPECT_TRUE(m.empty());
  const Fed f = feed(m, {"abc"});
  EXPECT_FALSE(f.stopped);
  EXPECT_EQ(f.delivered, "abc");
}

}  // namespace
}  // namespace chorus
