// Decode rates from step records: the step rate counts a step's prompt chunks, the decode
// rate leaves them out. Checked on hand-made records and on what the engine records.
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "engine/sched/decode_rates.h"
#include "tests/engine/sched_test_util.h"
#include "tests/engine/step_records.h"

namespace chorus::test {
namespace {

TEST(DecodeRates, NoDecodeStepsGiveZeroNotADivisionByZero) {
  EXPECT_EQ(decode_rates({}).step_tok_per_s(), 0.0);
  const std::vector<StepRecord> prefill_only = {make_step(0, 700, 0, 128, 700)};
  const DecodeRates r = decode_rates(prefill_only);
  EXPECT_EQ(r.n_decoded, 0);
  EXPECT_EQ(r.n_decode_steps, 0);
  EXPECT_EQ(r.step_tok_per_s(), 0.0);
  EXPECT_EQ(r.decode_tok_per_s(), 0.0);
}

// A prompt-only step counts in neither rate; a shared step counts whole in the step rate and
// without its prompt call in the decode rate.
TEST(DecodeRates, SharedStepsCountTheirPromptsOnlyInTheStepRate) {
  const std::vector<StepRecord> steps = {
      make_step(0, 3000, 0, 512, 3000),  // prompts alone
      make_step(0, 1000, 4, 512, 600),   // 4 streams decode, and prompt chunks
      make_step(0, 500, 8, 0, 0),        // 8 streams decode
  };
  const DecodeRates r = decode_rates(steps);
  EXPECT_EQ(r.n_decoded, 12);
  EXPECT_EQ(r.n_decode_steps, 2);
  EXPECT_EQ(r.t_decode_steps_us, 1500);
  EXPECT_EQ(r.t_prefill_shared_us, 600);
  EXPECT_DOUBLE_EQ(r.step_tok_per_s(), 12 * 1e6 / 1500);
  EXPECT_DOUBLE_EQ(r.decode_tok_per_s(), 12 * 1e6 / 900);
}

TEST(DecodeRates, APrefillLongerThanItsStepLeavesNoNegativeTime) {
  const std::vector<StepRecord> steps = {make_step(0, 400, 2, 64, 900)};
  const DecodeRates r = decode_rates(steps);
  EXPECT_EQ(r.t_prefill_shared_us, 400);
  EXPECT_EQ(r.decode_tok_per_s(), 0.0);
  EXPECT_DOUBLE_EQ(r.step_tok_per_s(), 2 * 1e6 / 400);
}

// The engine records each step's prompt call as its own phase: at least the fake backend's
// sleep for those tokens, within the step, and 0 in steps without prompts. Prompts queued
// together are computed one a step (the fake takes one sequence a call) beside the streams
// that already decode, so some steps share, and the decode rate is the higher one.
TEST(DecodeRates, TheEngineRecordsThePromptCallOfEachStep) {
  constexpr int kPromptTokens = 100, kMaxTokens = 10, kRequests = 3;
  constexpr auto kPerToken = std::chrono::microseconds(4);
  std::mutex mu;
  std::vector<StepRecord> steps;
  FakeEngineSetup setup;
  setup.backend.decode_delay = std::chrono::microseconds(200);
  setup.backend.prefill_delay_per_token = kPerToken;
  setup.on_step = [&](const StepRecord& r, const StepPlan&) {
    std::lock_guard<std::mutex> lock(mu);
    steps.push_back(r);
  };
  const auto queued = CallGate::arm(setup.backend, 0);
  auto engine = make_fake_engine(setup);
  Collector c;
  for (int i = 0; i < kRequests; ++i) engine->submit(make_request(i, kPromptTokens, kMaxTokens), c.callbacks());
  queued->release();
  ASSERT_TRUE(c.wait_finished(kRequests));
  engine->wait_idle();
  std::lock_guard<std::mutex> lock(mu);
  int n_shared = 0;
  int64_t shared_prompt_tokens = 0;
  for (const StepRecord& r : steps) {
    EXPECT_GE(r.t_prefill_us, 0);
    EXPECT_LE(r.t_prefill_us + r.t_forward_us, r.t_step_us);
    if (r.n_prefill_tokens == 0) {
      EXPECT_EQ(r.t_prefill_us, 0) << "step " << r.index;
      continue;
    }
    EXPECT_GE(r.t_prefill_us, kPerToken.count() * r.n_prefill_tokens) << "step " << r.index;
    if (r.n_decode > 0) {
      ++n_shared;
      shared_prompt_tokens += r.n_prefill_tokens;
    }
  }
  EXPECT_GT(n_shared, 0);
  const DecodeRates rates = decode_rates(steps);
  EXPECT_EQ(rates.n_decoded, kRequests * (kMaxTokens - 1));  // the first token comes from the prompt
  EXPECT_GE(rates.t_prefill_shared_us, kPerToken.count() * shared_prompt_tokens);
  EXPECT_GT(rates.decode_tok_per_s(), rates.step_tok_per_s());
  // The engine's own mean (the app's phase chart) carries the phase, and its phases still
  // add up to the step.
  const StepPhaseTimes mean = engine->stats().mean_step;
  EXPECT_GE(mean.prefill_us, kPerToken.count() * kPromptTokens * kRequests / static_cast<double>(steps.size()));
  const double sum = mean.schedule_us + mean.upload_us + mean.forward_us + mean.sample_us +
                     mean.download_us + mean.prefill_us + mean.detokenize_us + mean.deliver_us;
  EXPECT_NEAR(sum, mean.step_us, 0.01 * mean.step_us + 1.0);
}

}  // namespace
}  // namespace chorus::test
