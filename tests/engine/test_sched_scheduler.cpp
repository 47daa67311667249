// The scheduling policy on its own: plans are produced and applied by hand, no backend.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/sched/scheduler.h"

namespace chorus {
namespace {

NewSequence seq(int64_t id, int n_prompt, int32_t priority = 0) {
  NewSequence s;
  s.id = id;
  s.prompt.assign(static_cast<size_t>(n_prompt), 3);
  s.priority = priority;
  return s;
}

// Applies a plan as if the backend sampled token 7 everywhere.
void execute(Scheduler& s) {
  const StepPlan& p = s.plan();
  std::vector<int32_t> tokens(p.decode.size(), 7);
  if (!p.decode.empty()) s.apply_decode(tokens);
  if (p.prefill) s.apply_prefill(7);
}

bool decodes(const StepPlan& p, int64_t id) {
  return std::any_of(p.decode.begin(), p.decode.end(),
                     [&](const PlannedDecode& d) { return d.seq_id == id; });
}

TEST(Scheduler, LongPromptIsChunkedAndOnlyTheLastChunkSamples) {
  Scheduler s({32, 256, 4096}, KvLayout{16, 256});
  s.add(seq(1, 2000));
  int n_chunks = 0, n_past = 0;
  for (;;) {
    const StepPlan& p = s.schedule();
    ASSERT_TRUE(p.prefill);
    EXPECT_EQ(p.prefill->n_past, n_past);
    EXPECT_LE(p.prefill->n_tokens, 256);
    n_past += p.prefill->n_tokens;
    ++n_chunks;
    const bool last = n_past == 2000;
    EXPECT_EQ(p.prefill->samples_first_token, last);
    execute(s);
    if (last) break;
  }
  EXPECT_EQ(n_chunks, 8);
  const StepPlan& p = s.schedule();
  ASSERT_EQ(p.decode.size(), 1u);
  EXPECT_EQ(p.decode[0].n_past, 2000);
  EXPECT_EQ(p.decode[0].input_token, 7);
}

TEST(Scheduler, RunningStreamsDecodeEveryStepWhileAPromptIsChunked) {
  Scheduler s({32, 256, 4096}, KvLayout{16, 512});
  s.add(seq(1, 10));
  s.add(seq(2, 10));
  for (int i = 0; i < 4; ++i) {
    s.schedule();
    execute(s);
  }
  s.add(seq(3, 1000));
  for (int step = 0; step < 4; ++step) {
    const StepPlan& p = s.schedule();
    EXPECT_TRUE(decodes(p, 1));
    EXPECT_TRUE(decodes(p, 2));
    ASSERT_TRUE(p.prefill);
    EXPECT_EQ(p.prefill->seq_id, 3);
    execute(s);
  }
}

TEST(Scheduler, NewRequestWaitsWhenTheCacheIsFull) {
  // 8 blocks of 16: sequence 1's 100-token prompt takes 7 blocks (+1 slot to decode).
  Scheduler s({32, 256, 4096}, KvLayout{16, 8});
  s.add(seq(1, 100));
  s.schedule();
  execute(s);
  s.add(seq(2, 40));
  const StepPlan& p = s.schedule();
  EXPECT_TRUE(decodes(p, 1));
  EXPECT_FALSE(p.prefill);
  EXPECT_TRUE(p.preempted.empty());
  EXPECT_EQ(s.n_waiting(), 1);
  s.remove(1);
  const StepPlan& q = s.schedule();
  ASSERT_TRUE(q.prefill);
  EXPECT_EQ(q.prefill->seq_id, 2);
}

TEST(Scheduler, GrowthPreemptsTheLowestRankedAndRecomputesWithoutResampling) {
  // Two sequences of 31 tokens in 4 blocks of 16: both fit until they cross 32 tokens.
  Scheduler s({32, 256, 4096}, KvLayout{16, 4});
  s.add(seq(1, 31));
  s.add(seq(2, 31));
  bool preempted = false;
  for (int step = 0; step < 10 && !preempted; ++step) {
    const StepPlan& p = s.schedule();
    if (!p.preempted.empty()) {
      EXPECT_EQ(p.preempted[0], 2);  // later arrival, same priority
      EXPECT_TRUE(decodes(p, 1));
      EXPECT_FALSE(decodes(p, 2));
      preempted = true;
    }
    execute(s);
  }
  ASSERT_TRUE(preempted);
  const Sequence* victim = s.find(2);
  ASSERT_NE(victim, nullptr);
  EXPECT_EQ(victim->phase, SeqPhase::Waiting);
  EXPECT_EQ(victim->n_computed, 0);
  EXPECT_TRUE(victim->block_table.empty());
  EXPECT_GT(victim->n_generated(), 0);
  // Recompute: everything but the last generated token, and no sampling.
  s.remove(1);
  const StepPlan& p = s.schedule();
  ASSERT_TRUE(p.prefill);
  EXPECT_EQ(p.prefill->seq_id, 2);
  EXPECT_EQ(p.prefill->n_tokens, victim->n_tokens() - 1);
  EXPECT_FALSE(p.prefill->samples_first_token);
  execute(s);
  const StepPlan& d = s.schedule();
  ASSERT_EQ(d.decode.size(), 1u);
  EXPECT_EQ(d.decode[0].n_past, victim->n_tokens() - 1);
}

TEST(Scheduler, HigherPriorityRequestDisplacesLowerPriorityOne) {
  Scheduler s({32, 256, 4096}, KvLayout{16, 4});
  s.add(seq(1, 40, /*priority=*/0));
  s.schedule();
  execute(s);
  s.add(seq(2, 40, /*priority=*/5));
  const StepPlan& p = s.schedule();
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], 1);
  EXPECT_FALSE(decodes(p, 1));
  ASSERT_TRUE(p.prefill);
  EXPECT_EQ(p.prefill->seq_id, 2);
}

TEST(Scheduler, EqualPriorityRequestDoesNotDisplace) {
  Scheduler s({32, 256, 4096}, KvLayout{16, 4});
  s.add(seq(1, 40));
  s.schedule();
  execute(s);
  s.add(seq(2, 40));
  const StepPlan& p = s.schedule();
  EXPECT_TRUE(p.preempted.empty());
  EXPECT_FALSE(p.prefill);
}

TEST(Scheduler, ContextLimitIsCappedByTheCache) {
  Scheduler s({32, 256, 4096}, KvLayout{16, 10});
  EXPECT_EQ(s.context_limit(), 160);
  Scheduler t({32, 256, 100}, KvLayout{16, 10});
  EXPECT_EQ(t.context_limit(), 100);
}

TEST(Scheduler, BatchNeverExceedsMaxBatch) {
  Scheduler s({4, 256, 4096}, KvLayout{16, 256});
  for (int i = 0; i < 10; ++i) s.add(seq(i + 1, 5));
  for (int step = 0; step < 30; ++step) {
    const StepPlan& p = s.schedule();
    EXPECT_LE(static_cast<int>(p.decode.size()) + (p.prefill ? 1 : 0), 4);
    EXPECT_LE(s.n_running(), 4);
    execute(s);
  }
  EXPECT_EQ(s.n_waiting(), 6);
}

TEST(Scheduler, RemoveFreesBlocksWherever) {
  Scheduler s({32, 256, 4096}, KvLayout{16, 64});
  s.add(seq(1, 300));
  s.add(seq(2, 10));
  s.schedule();  // chunk of 1
  execute(s);
  EXPECT_GT(s.allocator().n_blocks_used(), 0);
  s.remove(1);  // mid-prefill
  s.remove(2);  // waiting
  s.remove(99); // unknown
  EXPECT_EQ(s.allocator().n_blocks_used(), 0);
  EXPECT_FALSE(s.has_work());
}

}  // namespace
}  // namespace chorus
