// The engine on a fake backend that takes several sequences' prompt chunks in one prefill
// call: prompts arriving together share calls within the backend's limits, replies stay what
// each request gets alone, and a failed shared call fails exactly the requests in it.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tests/engine/sched_test_util.h"

namespace chorus::test {
namespace {

// A backend that takes several sequences' chunks in one call gets prompts arriving together
// in shared calls, within its limits, and every reply is still the one the request gets alone.
TEST(SchedPrefillPacking, PromptsArrivingTogetherSharePrefillCallsAndMatchSolo) {
  std::shared_ptr<FakeCallLog> log;
  FakeEngineSetup setup = logged_setup(log);
  setup.backend.max_prefill_seqs = 4;
  setup.backend.max_prefill_tokens = 512;
  setup.prefill_chunk_tokens = 256;
  setup.backend.prefill_delay_per_token = std::chrono::microseconds(1);  // measurable prefill times
  const auto gate = CallGate::arm(setup.backend);
  auto engine = make_fake_engine(setup);
  Collector c;
  const std::vector<int> prompt_tokens = {20, 128, 128, 300, 40, 600, 10, 10, 10, 10};
  std::vector<RequestId> ids;
  for (size_t i = 0; i < prompt_tokens.size(); ++i) {
    ids.push_back(engine->submit(make_request(static_cast<int>(i), prompt_tokens[i], 20), c.callbacks()));
    if (i == 0) gate->wait_reached();
  }
  gate->release();
  ASSERT_TRUE(c.wait_finished(static_cast<int>(ids.size())));
  for (size_t i = 0; i < ids.size(); ++i) {
    const Outcome batched = c.get(ids[i]);
    const Outcome solo = run_solo(setup, make_request(static_cast<int>(i), prompt_tokens[i], 20));
    EXPECT_EQ(batched.reason, FinishReason::MaxTokens);
    EXPECT_EQ(batched.tokens, solo.tokens) << "sequence " << i;
    EXPECT_GT(batched.stats.prefill_tok_per_s, 0.0);
  }
  // Call 0: the first prompt alone. Call 1: 128 + 128 + 256 of the 300 (512 tokens; the 40
  // does not fit and nothing overtakes it). Call 2: the rest of the 300 (44), the 40, 256 of
  // the 600 and one 10-token prompt (the cap of 4 sequences).
  std::vector<std::vector<int32_t>> prefills;
  for (const FakeCall& call : log->snapshot()) {
    if (call.kind == FakeCall::Kind::Prefill) prefills.push_back(call.chunk_tokens);
  }
  ASSERT_GE(prefills.size(), 3u);
  EXPECT_EQ(prefills[0], (std::vector<int32_t>{20}));
  EXPECT_EQ(prefills[1], (std::vector<int32_t>{128, 128, 256}));
  EXPECT_EQ(prefills[2], (std::vector<int32_t>{44, 40, 256, 10}));
}

// A failed shared prefill call fails every request in it, and only those.
TEST(SchedPrefillPacking, FailedSharedPrefillFailsItsRequestsOnly) {
  FakeEngineSetup setup;
  setup.backend.max_prefill_seqs = 4;
  const auto gate = CallGate::arm(setup.backend);
  setup.backend.fail_if = [](const FakeCall& call) {
    return call.kind == FakeCall::Kind::Prefill &&
           std::count(call.seq_ids.begin(), call.seq_ids.end(), 2) > 0;
  };
  auto engine = make_fake_engine(setup);
  Collector c;
  const RequestId a = engine->submit(make_request(0, 8, 10), c.callbacks());
  gate->wait_reached();
  const RequestId b = engine->submit(make_request(1, 8, 10), c.callbacks());
  const RequestId d = engine->submit(make_request(2, 8, 10), c.callbacks());
  gate->release();
  ASSERT_TRUE(c.wait_finished(3));
  const RequestId e = engine->submit(make_request(3, 8, 10), c.callbacks());
  ASSERT_TRUE(c.wait_finished(4));
  ASSERT_EQ(b, 2u);
  EXPECT_EQ(c.get(a).reason, FinishReason::MaxTokens);
  EXPECT_EQ(c.get(b).reason, FinishReason::Error);
  EXPECT_EQ(c.get(d).reason, FinishReason::Error);  // shared b's call
  ASSERT_TRUE(c.get(d).error.has_value());
  EXPECT_NE(c.get(d).error->find("injected failure"), std::string::npos);
  EXPECT_EQ(c.get(e).reason, FinishReason::MaxTokens);
  EXPECT_EQ(c.get(e).tokens.size(), 10u);
}

}  // namespace
}  // namespace chorus::test
