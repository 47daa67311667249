// The engine on the fake backend: continuous batching, chunked prefill, preemption,
// stop conditions, errors, model swaps, stats.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "tests/engine/sched_test_util.h"

namespace chorus::test {
namespace {

TEST(SchedEngine, BatchedOutputEqualsSoloOutput) {
  FakeEngineSetup setup;
  auto engine = make_fake_engine(setup);
  Collector c;
  std::vector<RequestId> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(engine->submit(make_request(i, 20 + i, 30), c.callbacks()));
  ASSERT_TRUE(c.wait_finished(8));
  for (int i = 0; i < 8; ++i) {
    const Outcome batched = c.get(ids[static_cast<size_t>(i)]);
    const Outcome solo = run_solo(setup, make_request(i, 20 + i, 30));
    EXPECT_EQ(batched.reason, FinishReason::MaxTokens);
    EXPECT_EQ(batched.tokens.size(), 30u);
    EXPECT_EQ(batched.tokens, solo.tokens) << "sequence " << i;
    EXPECT_EQ(batched.text, solo.text);
  }
}

TEST(SchedEngine, RequestsJoinAndLeaveMidFlight) {
  std::shared_ptr<FakeCallLog> log;
  FakeEngineSetup setup = logged_setup(log);
  setup.backend.decode_delay = std::chrono::microseconds(100);
  auto engine = make_fake_engine(setup);
  Collector c;
  // `a` has no token limit: it runs until cancelled (or, 4096 steps later, the context).
  const RequestId a = engine->submit(make_request(0, 8, 0), c.callbacks());
  ASSERT_TRUE(c.wait_tokens(a, 5));
  const RequestId b = engine->submit(make_request(1, 8, 10), c.callbacks());  // joins, leaves
  ASSERT_TRUE(c.wait_finished(1));
  EXPECT_EQ(c.get(b).reason, FinishReason::MaxTokens);
  EXPECT_FALSE(c.get(a).reason.has_value());
  const RequestId d = engine->submit(make_request(2, 8, 10), c.callbacks());  // joins later
  ASSERT_TRUE(c.wait_finished(2));
  EXPECT_EQ(c.get(d).tokens.size(), 10u);
  engine->cancel(a);
  ASSERT_TRUE(c.wait_finished(3));
  const Outcome oa = c.get(a);
  EXPECT_EQ(oa.reason, FinishReason::Cancelled);
  // Some decode step ran a and b together, and a kept decoding after b left.
  const auto calls = log->snapshot();
  bool together = false, a_after_b = false;
  const auto has = [](const FakeCall& call, RequestId id) {
    return std::count(call.seq_ids.begin(), call.seq_ids.end(), static_cast<int64_t>(id)) > 0;
  };
  for (const FakeCall& call : calls) {
    if (call.kind != FakeCall::Kind::Decode) continue;
    if (has(call, a) && has(call, b)) together = true;
    if (together && has(call, a) && !has(call, b)) a_after_b = true;
  }
  EXPECT_TRUE(together);
  EXPECT_TRUE(a_after_b);
  // Joining and leaving did not change a's tokens.
  const int n = static_cast<int>(oa.tokens.size());
  EXPECT_EQ(oa.tokens, run_solo(setup, make_request(0, 8, n)).tokens);
}

TEST(SchedEngine, CancelEndsTheRequestAndFreesItsBlocks) {
  FakeEngineSetup setup;
  setup.backend.decode_delay = std::chrono::microseconds(100);  // context full is far away
  auto engine = make_fake_engine(setup);
  Collector c;
  Request r = make_request(0, 8, 0);  // no max: only cancel or the context ends it
  const RequestId id = engine->submit(r, c.callbacks());
  const RequestId other = engine->submit(make_request(1, 8, 50), c.callbacks());
  ASSERT_TRUE(c.wait_tokens(id, 3));
  engine->cancel(id);
  ASSERT_TRUE(c.wait_finished(2));
  EXPECT_EQ(c.get(id).reason, FinishReason::Cancelled);
  EXPECT_EQ(c.get(other).reason, FinishReason::MaxTokens);
  engine->cancel(id);     // already finished: no effect
  engine->cancel(12345);  // unknown: no effect
  engine->wait_idle();
  EXPECT_EQ(engine->stats().kv_blocks_used, 0);
  EXPECT_EQ(c.n_finished(), 2);
}

TEST(SchedEngine, CancelTakesEffectAtTheNextStep) {
  // The first prompt chunk is held inside the backend until the test has cancelled, so
  // the cancel is known to arrive during that step.
  std::shared_ptr<FakeCallLog> log;
  FakeEngineSetup setup = logged_setup(log);
  const auto first_chunk = CallGate::arm(setup.backend);
  auto engine = make_fake_engine(setup);
  Collector c;
  const RequestId id = engine->submit(make_request(0, 3000, 10), c.callbacks());
  first_chunk->wait_reached();
  engine->cancel(id);
  first_chunk->release();
  ASSERT_TRUE(c.wait_done(id));
  EXPECT_EQ(c.get(id).reason, FinishReason::Cancelled);
  engine->wait_idle();
  EXPECT_EQ(log->size(), 1u);  // no step ran for it after the one in flight
  EXPECT_EQ(engine->stats().kv_blocks_used, 0);
}

TEST(SchedEngine, LongPromptDoesNotStallRunningStreams) {
  std::shared_ptr<FakeCallLog> log;
  FakeEngineSetup setup = logged_setup(log);
  setup.backend.kv.n_blocks = 4096;
  setup.backend.decode_delay = std::chrono::microseconds(100);
  auto engine = make_fake_engine(setup);
  Collector c;
  // The streams have no token limit: they run until cancelled (or the context is full).
  std::vector<RequestId> streams;
  for (int i = 0; i < 3; ++i) streams.push_back(engine->submit(make_request(i, 16, 0), c.callbacks()));
  for (RequestId id : streams) ASSERT_TRUE(c.wait_tokens(id, 2));
  const RequestId big = engine->submit(make_request(9, 2000, 5), c.callbacks());
  ASSERT_TRUE(c.wait_done(big));
  EXPECT_EQ(c.get(big).reason, FinishReason::MaxTokens);
  for (RequestId id : streams) engine->cancel(id);
  ASSERT_TRUE(c.wait_finished(4));
  // Between two consecutive decode steps of each running stream, at most one prefill chunk,
  // and no chunk longer than 256 tokens.
  const auto calls = log->snapshot();
  const auto has = [](const FakeCall& call, RequestId id) {
    return std::count(call.seq_ids.begin(), call.seq_ids.end(), static_cast<int64_t>(id)) > 0;
  };
  for (RequestId s : streams) {
    int chunks_since_decode = 0;
    bool seen_decode = false;
    for (const FakeCall& call : calls) {
      if (call.kind == FakeCall::Kind::Prefill) {
        EXPECT_LE(call.n_tokens, 256);
        if (seen_decode) ++chunks_since_decode;
      } else if (has(call, s)) {
        EXPECT_LE(chunks_since_decode, 1) << "stream " << s << " stalled at call " << call.index;
        chunks_since_decode = 0;
        seen_decode = true;
      }
    }
  }
  int big_chunks = 0, stream_decodes_during_prefill = 0;
  for (const FakeCall& call : calls) {
    if (call.kind == FakeCall::Kind::Prefill && has(call, big)) ++big_chunks;
    if (call.kind == FakeCall::Kind::Decode && big_chunks > 0 && big_chunks < 8 &&
        has(call, streams[0])) {
      ++stream_decodes_during_prefill;
    }
  }
  EXPECT_EQ(big_chunks, 8);  // 2000 = 7 * 256 + 208
  EXPECT_GE(stream_decodes_during_prefill, 7);  // the streams kept going throughout
}

TEST(SchedEngine, KvExhaustionMakesRequestsWaitAndPreemptionRecomputesExactly) {
  std::shared_ptr<FakeCallLog> log;
  FakeEngineSetup setup = logged_setup(log);
  setup.backend.kv = KvLayout{16, 24};  // 384 slots for 6 requests that each reach 140
  setup.context_tokens = 384;
  // All six are queued before the engine's first call ends. Without the gate, a submitting
  // thread descheduled between submits (a loaded CI machine) let the first requests finish
  // before the last arrived, and nothing was ever preempted.
  const auto gate = CallGate::arm(setup.backend);
  auto engine = make_fake_engine(setup);
  Collector c;
  std::vector<RequestId> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(engine->submit(make_request(i, 40, 100), c.callbacks()));
  gate->release();
  ASSERT_TRUE(c.wait_finished(6));
  int32_t n_preemptions = 0;
  for (int i = 0; i < 6; ++i) {
    const Outcome o = c.get(ids[static_cast<size_t>(i)]);
    EXPECT_EQ(o.reason, FinishReason::MaxTokens) << (o.error ? *o.error : "");
    EXPECT_EQ(o.tokens, run_solo(setup, make_request(i, 40, 100)).tokens) << "sequence " << i;
    n_preemptions += o.stats.n_preemptions;
  }
  EXPECT_GT(n_preemptions, 0);
  // Never more cache in use than exists: the fake rejects a block table past its cache,
  // and every request finished without error. The stats agree.
  EXPECT_EQ(engine->stats().kv_blocks_used, 0);
  EXPECT_EQ(engine->stats().kv_blocks_total, 24);
}

TEST(SchedEngine, StopStringSplitAcrossTokensEndsTheReplyWithoutIt) {
  FakeEngineSetup setup;
  const Outcome free_run = run_solo(setup, make_request(3, 12, 60));
  ASSERT_EQ(free_run.tokens.size(), 60u);
  // Pick a stop string straddling the boundary between tokens 20 and 21.
  std::string before;
  for (int i = 0; i < 20; ++i) before += FakeTextCodec::piece(free_run.tokens[static_cast<size_t>(i)]);
  const std::string t20 = FakeTextCodec::piece(free_run.tokens[20]);
  const std::string t21 = FakeTextCodec::piece(free_run.tokens[21]);
  const std::string stop = t20.substr(t20.size() - 1) + t21;
  const size_t first = free_run.text.find(stop);
  ASSERT_NE(first, std::string::npos);

  auto engine = make_fake_engine(setup);
  Collector c;
  Request r = make_request(3, 12, 60);
  r.stop_strings = {"never-appears", stop};
  const RequestId id = engine->submit(r, c.callbacks());
  ASSERT_TRUE(c.wait_finished(1));
  const Outcome o = c.get(id);
  EXPECT_EQ(o.reason, FinishReason::StopString);
  EXPECT_EQ(o.text, free_run.text.substr(0, first));
  EXPECT_EQ(o.text.find(stop), std::string::npos);
}

TEST(SchedEngine, TextThatMightStartAStopStringIsHeldBackThenReleased) {
  FakeEngineSetup setup;
  const Outcome free_run = run_solo(setup, make_request(4, 12, 40));
  // The first piece plus a character that never occurs in fake text: a stop string
  // whose prefix appears, so text is held back, and which never completes.
  const std::string stop = FakeTextCodec::piece(free_run.tokens[0]) + "#";
  auto engine = make_fake_engine(setup);
  Collector c;
  Request r = make_request(4, 12, 40);
  r.stop_strings = {stop};
  const RequestId id = engine->submit(r, c.callbacks());
  ASSERT_TRUE(c.wait_finished(1));
  EXPECT_EQ(c.get(id).reason, FinishReason::MaxTokens);
  EXPECT_EQ(c.get(id).text, free_run.text);  // everything held back was delivered at the end
}

TEST(SchedEngine, MaxTokens) {
  FakeEngineSetup setup;
  auto engine = make_fake_engine(setup);
  Collector c;
  const RequestId one = engine->submit(make_request(0, 5, 1), c.callbacks());
  const RequestId many = engine->submit(make_request(1, 5, 77), c.callbacks());
  ASSERT_TRUE(c.wait_finished(2));
  EXPECT_EQ(c.get(one).tokens.size(), 1u);
  EXPECT_EQ(c.get(many).tokens.size(), 77u);
  EXPECT_EQ(c.get(many).reason, FinishReason::MaxTokens);
  EXPECT_EQ(c.get(many).stats.n_generated_tokens, 77);
}

TEST(SchedEngine, ContextFull) {
  FakeEngineSetup setup;
  setup.context_tokens = 64;
  auto engine = make_fake_engine(setup);
  Collector c;
  const RequestId grows = engine->submit(make_request(0, 50, 1000), c.callbacks());
  const RequestId too_long = engine->submit(make_request(1, 64, 10), c.callbacks());
  ASSERT_TRUE(c.wait_finished(2));
  EXPECT_EQ(c.get(grows).reason, FinishReason::ContextFull);
  EXPECT_EQ(c.get(grows).tokens.size(), 14u);  // 50 + 14 = the 64-token context
  EXPECT_EQ(c.get(too_long).reason, FinishReason::ContextFull);
  EXPECT_TRUE(c.get(too_long).tokens.empty());
}

TEST(SchedEngine, ContextFullWhenTheCacheIsSmallerThanTheContext) {
  FakeEngineSetup setup;
  setup.backend.kv = KvLayout{16, 4};  // 64 slots
  auto engine = make_fake_engine(setup);
  Collector c;
  const RequestId id = engine->submit(make_request(0, 30, 1000), c.callbacks());
  ASSERT_TRUE(c.wait_finished(1));
  EXPECT_EQ(c.get(id).reason, FinishReason::ContextFull);
  EXPECT_EQ(c.get(id).tokens.size(), 34u);
}

TEST(SchedEngine, EndOfGenerationTokenEndsTheReplyAndIsNotDelivered) {
  FakeEngineSetup setup;
  const Outcome free_run = run_solo(setup, make_request(5, 10, 50));
  const int32_t eog = free_run.tokens[17];
  const size_t first = static_cast<size_t>(
      std::find(free_run.tokens.begin(), free_run.tokens.end(), eog) - free_run.tokens.begin());
  setup.codec.eog_token = eog;
  auto engine = make_fake_engine(setup);
  Collector c;
  Request r = make_request(5, 10, 50);
  r.ignore_eos = false;
  const RequestId id = engine->submit(r, c.callbacks());
  ASSERT_TRUE(c.wait_finished(1));
  EXPECT_EQ(c.get(id).reason, FinishReason::EndOfGeneration);
  EXPECT_EQ(c.get(id).tokens,
            std::vector<int32_t>(free_run.tokens.begin(), free_run.tokens.begin() + first));
}

TEST(SchedEngine, SeededSamplingIsReproducibleAndIndependentOfBatching) {
  FakeEngineSetup setup;
  Request r = make_request(6, 10, 40);
  r.sampling.temperature = 0.8f;
  r.sampling.seed = 42;
  const Outcome solo = run_solo(setup, r);
  auto engine = make_fake_engine(setup);
  Collector c;
  std::vector<RequestId> noise;
  for (int i = 0; i < 5; ++i) noise.push_back(engine->submit(make_request(10 + i, 7, 40), c.callbacks()));
  const RequestId id = engine->submit(r, c.callbacks());
  ASSERT_TRUE(c.wait_finished(6));
  EXPECT_EQ(c.get(id).tokens, solo.tokens);
  Request other_seed = r;
  other_seed.sampling.seed = 43;
  EXPECT_NE(run_solo(setup, other_seed).tokens, solo.tokens);
}

TEST(SchedEngine, BackendErrorsBecomeOnErrorThenFinishError) {
  FakeEngineSetup setup;
  // Every decode that includes request 2 fails; the others must keep going afterwards.
  setup.backend.fail_if = [](const FakeCall& call) {
    return call.kind == FakeCall::Kind::Decode &&
           std::count(call.seq_ids.begin(), call.seq_ids.end(), 2) > 0;
  };
  auto engine = make_fake_engine(setup);
  Collector c;
  const RequestId a = engine->submit(make_request(0, 8, 20), c.callbacks());
  ASSERT_TRUE(c.wait_tokens(a, 1));
  const RequestId b = engine->submit(make_request(1, 8, 20), c.callbacks());
  ASSERT_EQ(b, 2u);
  ASSERT_TRUE(c.wait_finished(2));
  const RequestId later = engine->submit(make_request(2, 8, 20), c.callbacks());
  ASSERT_TRUE(c.wait_finished(3));
  const Outcome ob = c.get(b);
  EXPECT_EQ(ob.reason, FinishReason::Error);
  ASSERT_TRUE(ob.error.has_value());
  EXPECT_NE(ob.error->find("injected failure"), std::string::npos);
  EXPECT_EQ(c.get(later).reason, FinishReason::MaxTokens);
  EXPECT_EQ(c.get(later).tokens.size(), 20u);
}

TEST(SchedEngine, PrefillErrorAffectsOnlyThatRequest) {
  FakeEngineSetup setup;
  setup.backend.fail_if = [](const FakeCall& call) {
    return call.kind == FakeCall::Kind::Prefill && call.seq_ids[0] == 2;
  };
  auto engine = make_fake_engine(setup);
  Collector c;
  const RequestId a = engine->submit(make_request(0, 8, 30), c.callbacks());
  const RequestId b = engine->submit(make_request(1, 8, 30), c.callbacks());
  ASSERT_TRUE(c.wait_finished(2));
  EXPECT_EQ(c.get(a).reason, FinishReason::MaxTokens);
  EXPECT_EQ(c.get(b).reason, FinishReason::Error);
  EXPECT_TRUE(c.get(b).error.has_value());
}

TEST(SchedEngine, BadRequestsAreRefusedWithAMessage) {
  FakeEngineSetup setup;
  auto engine = make_fake_engine(setup);
  Collector c;
  const RequestId empty = engine->submit(Request{}, c.callbacks());
  Request bad_token = make_request(0, 4, 4);
  bad_token.prompt_tokens[2] = 100000;
  const RequestId bad = engine->submit(bad_token, c.callbacks());
  ASSERT_TRUE(c.wait_finished(2));
  EXPECT_EQ(c.get(empty).reason, FinishReason::Error);
  EXPECT_TRUE(c.get(empty).error.has_value());
  EXPECT_EQ(c.get(bad).reason, FinishReason::Error);
  EXPECT_NE(c.get(bad).error->find("100000"), std::string::npos);
}

TEST(SchedEngine, MessagesAreEncodedByTheCodec) {
  FakeEngineSetup setup;
  auto engine = make_fake_engine(setup);
  Collector c;
  Request r;
  r.messages = {{"user", "hello"}};
  r.max_tokens = 5;
  r.ignore_eos = true;
  const RequestId id = engine->submit(r, c.callbacks());
  ASSERT_TRUE(c.wait_finished(1));
  EXPECT_EQ(c.get(id).reason, FinishReason::MaxTokens);
  EXPECT_EQ(c.get(id).stats.n_prompt_tokens, 12);  // "user: hello\n"
}

TEST(SchedEngine, NoModelLoadedIsAnError) {
  Engine engine(EngineOptions{});
  Collector c;
  const RequestId id = engine.submit(make_request(0, 4, 4), c.callbacks());
  ASSERT_TRUE(c.wait_finished(1));
  EXPECT_EQ(c.get(id).reason, FinishReason::Error);
  EXPECT_FALSE(engine.load_model(LoadOptions{}).ok());
  EXPECT_FALSE(engine.stats().model_loaded);
}

TEST(SchedEngine, LoadModelCancelsRunningRequestsAndSwapsBackends) {
  FakeEngineSetup setup;
  setup.backend.decode_delay = std::chrono::microseconds(100);  // context full is far away
  auto engine = make_fake_engine(setup);
  Collector c;
  const RequestId old = engine->submit(make_request(0, 8, 0), c.callbacks());
  ASSERT_TRUE(c.wait_tokens(old, 2));
  LoadOptions load;
  load.context_tokens = 128;
  ASSERT_TRUE(engine->load_model(load).ok());
  ASSERT_TRUE(c.wait_finished(1));
  EXPECT_EQ(c.get(old).reason, FinishReason::Cancelled);
  const RequestId fresh = engine->submit(make_request(1, 100, 1000), c.callbacks());
  ASSERT_TRUE(c.wait_finished(2));
  EXPECT_EQ(c.get(fresh).reason, FinishReason::ContextFull);  // the new 128-token context
  EXPECT_EQ(c.get(fresh).tokens.size(), 28u);
}

TEST(SchedEngine, LoadModelFromACallbackIsRefused) {
  FakeEngineSetup setup;
  auto engine = make_fake_engine(setup);
  Collector c;
  std::atomic<bool> refused{false};
  RequestCallbacks cb = c.callbacks();
  auto inner = cb.on_finish;
  Engine* e = engine.get();
  cb.on_finish = [&, inner](RequestId id, FinishReason r, const RequestStats& s) {
    refused = !e->load_model(LoadOptions{}).ok();
    inner(id, r, s);
  };
  engine->submit(make_request(0, 4, 2), cb);
  ASSERT_TRUE(c.wait_finished(1));
  EXPECT_TRUE(refused.load());
}

TEST(SchedEngine, DestructorCancelsRemainingRequests) {
  Collector c;
  {
    FakeEngineSetup setup;
    setup.backend.decode_delay = std::chrono::microseconds(200);
    auto engine = make_fake_engine(setup);
    for (int i = 0; i < 4; ++i) engine->submit(make_request(i, 8, 0), c.callbacks());
  }
  EXPECT_EQ(c.n_finished(), 4);
  for (RequestId id = 1; id <= 4; ++id) EXPECT_EQ(c.get(id).reason, FinishReason::Cancelled);
}

TEST(SchedEngine, StatsAddUp) {
  std::mutex mu;
  std::vector<StepRecord> steps;
  FakeEngineSetup setup;
  setup.backend.decode_delay = std::chrono::microseconds(300);
  setup.on_step = [&](const StepRecord& r, const StepPlan&) {
    std::lock_guard<std::mutex> lock(mu);
    steps.push_back(r);
  };
  // The first backend call waits until all four are queued (so they run together however
  // slowly this thread submits); the 30th (all four decoding) is held while the test reads stats.
  const auto queued = CallGate::arm(setup.backend, 0);
  const auto mid_run = CallGate::arm(setup.backend, 30);
  auto engine = make_fake_engine(setup);
  Collector c;
  std::vector<RequestId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(engine->submit(make_request(i, 300, 40), c.callbacks()));
  queued->release();
  mid_run->wait_reached();
  const StatsSnapshot mid = engine->stats();
  mid_run->release();
  EXPECT_EQ(mid.n_running, 4);
  EXPECT_EQ(mid.current_batch, 4);
  EXPECT_TRUE(mid.model_loaded);
  EXPECT_EQ(mid.backend_name, "fake");
  EXPECT_GT(mid.kv_blocks_used, 0);
  EXPECT_GT(mid.aggregate_tok_per_s, 0.0);
  EXPECT_GE(mid.max_batch_seen, 1);
  EXPECT_FALSE(mid.requests.empty());
  ASSERT_TRUE(c.wait_finished(4));
  engine->wait_idle();
  const StatsSnapshot end = engine->stats();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_FALSE(steps.empty());
  int64_t decoded = 0;
  for (const StepRecord& r : steps) {
    const double sum = static_cast<double>(r.sum_phases_us());
    EXPECT_NEAR(sum, static_cast<double>(r.t_step_us), 0.05 * r.t_step_us + 1.0);
    decoded += r.n_decode;
  }
  // Each request's first token comes from its prefill, the rest from decode steps.
  EXPECT_EQ(decoded, 4 * 39);
  EXPECT_EQ(end.n_tokens_generated, 4 * 40);
  EXPECT_EQ(end.n_steps, static_cast<int64_t>(steps.size()));
  EXPECT_EQ(end.max_batch_seen, 4);
  EXPECT_EQ(end.kv_blocks_used, 0);
  for (const StepPhaseTimes& t : {end.last_step, end.mean_step}) {
    const double sum = t.schedule_us + t.upload_us + t.forward_us + t.sample_us + t.download_us +
                       t.prefill_us + t.detokenize_us + t.deliver_us;
    EXPECT_NEAR(sum, t.step_us, 0.05 * t.step_us + 1.0);
  }
  EXPECT_GT(end.mean_step.forward_us, 0.0);
  for (RequestId id : ids) {
    const RequestStats s = c.get(id).stats;
    EXPECT_EQ(s.n_prompt_tokens, 300);
    EXPECT_EQ(s.n_generated_tokens, 40);
    EXPECT_GT(s.t_first_token_us, 0);
    EXPECT_GE(s.t_first_token_us, s.t_queued_us);
    EXPECT_GT(s.prefill_tok_per_s, 0.0);
    EXPECT_GT(s.decode_tok_per_s, 0.0);
  }
}

}  // namespace
}  // namespace chorus::test
