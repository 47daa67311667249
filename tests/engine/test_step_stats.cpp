// StepStats: the engine's running figures for the performance panel, on hand-made steps.
#include <gtest/gtest.h>

#include <vector>

#include "engine/sched/engine_stats.h"
#include "tests/engine/step_records.h"

namespace chorus::test {
namespace {

TEST(StepStats, NothingRecordedGivesZeros) {
  const StepStats s;
  EXPECT_EQ(s.decode_tok_per_s(1'000'000), 0.0);
  EXPECT_EQ(s.prefill_tok_per_s(1'000'000), 0.0);
  EXPECT_EQ(s.mean().step_us, 0.0);
}

// Prompts come in bursts: the prefill figure is their speed while computed (tokens over the
// prefill phase), not tokens over the wall time the decode steps around them took.
TEST(StepStats, PrefillIsTheSpeedOfPromptComputationNotAWallRate) {
  StepStats s;
  int64_t t = 0;
  s.add(make_step(t, 30'000, 0, 512, 29'000));  // 512 prompt tokens in 29 ms
  t += 30'000;
  for (int i = 0; i < 200; ++i, t += 5'000) s.add(make_step(t, 5'000, 4, 0, 0));  // 1 s of decode
  EXPECT_NEAR(s.prefill_tok_per_s(t), 512 * 1e6 / 29'000, 1e-6);
  EXPECT_NEAR(s.decode_tok_per_s(t), 800 * 1e6 / static_cast<double>(t), 1e-6);
  // The mean step holds each phase, and they still add up to the step.
  const StepPhaseTimes mean = s.mean();
  EXPECT_NEAR(mean.prefill_us + mean.forward_us, mean.step_us, 1e-9);
  EXPECT_EQ(mean.prefill_us, 0.0);  // the last 64 steps decoded only
}

TEST(StepStats, PromptsOlderThanTheWindowLeaveThePrefillFigure) {
  StepStats s;
  s.add(make_step(0, 10'000, 0, 100, 10'000));
  EXPECT_NEAR(s.prefill_tok_per_s(10'000), 100 * 1e6 / 10'000, 1e-6);
  // Decode steps for longer than the window push the prompt step out of it.
  int64_t t = 10'000;
  for (; t < StepStats::kWindowUs + 100'000; t += 10'000) s.add(make_step(t, 10'000, 2, 0, 0));
  EXPECT_EQ(s.prefill_tok_per_s(t), 0.0);
  EXPECT_GT(s.decode_tok_per_s(t), 0.0);
  // A new prompt's figure is its own: nothing of the old one is left in the window.
  s.add(make_step(t, 8'000, 2, 256, 4'000));
  t += 8'000;
  EXPECT_NEAR(s.prefill_tok_per_s(t), 256 * 1e6 / 4'000, 1e-6);
  // And once nothing has run for a window, both are zero.
  EXPECT_EQ(s.decode_tok_per_s(t + 2 * StepStats::kWindowUs), 0.0);
  EXPECT_EQ(s.prefill_tok_per_s(t + 2 * StepStats::kWindowUs), 0.0);
}

TEST(StepStats, TwoPromptStepsInTheWindowPoolTheirTokensAndTime) {
  StepStats s;
  s.add(make_step(0, 5'000, 0, 128, 4'000));
  s.add(make_step(5'000, 20'000, 3, 512, 16'000));
  EXPECT_NEAR(s.prefill_tok_per_s(25'000), 640 * 1e6 / 20'000, 1e-6);
  EXPECT_NEAR(s.mean().prefill_us, 10'000, 1e-9);
}

// The mean of any records (chorus-bench run's steady steps) is the running mean's arithmetic.
TEST(StepStats, MeanOfRecordsIsTheRunningMeanOfTheSameSteps) {
  EXPECT_EQ(mean_phase_times({}).step_us, 0.0);
  StepStats s;
  std::vector<StepRecord> records;
  for (int i = 0; i < 10; ++i) {
    records.push_back(make_step(i * 10'000, 6'000 + 500 * i, 2, i % 3 == 0 ? 64 : 0, i % 3 == 0 ? 2'000 : 0));
    s.add(records.back());
  }
  const StepPhaseTimes a = mean_phase_times(records), b = s.mean();
  EXPECT_NEAR(a.step_us, 6'000 + 500 * 4.5, 1e-9);
  EXPECT_NEAR(a.prefill_us, 4 * 2'000 / 10.0, 1e-9);
  EXPECT_EQ(a.step_us, b.step_us);
  EXPECT_EQ(a.forward_us, b.forward_us);
  EXPECT_EQ(a.prefill_us, b.prefill_us);
}

}  // namespace
}  // namespace chorus::test
