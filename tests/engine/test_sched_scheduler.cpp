// The scheduling policy on its own: plans are produced and applied by hand, no backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

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
  if (!p.prefill.empty()) s.apply_prefill(std::vector<int32_t>(p.prefill.size(), 7));
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
    ASSERT_EQ(p.prefill.size(), 1u);
    EXPECT_EQ(p.prefill[0].n_past, n_past);
    EXPECT_LE(p.prefill[0].n_tokens, 256);
    n_past += p.prefill[0].n_tokens;
    ++n_chunks;
    const bool last = n_past == 2000;
    EXPECT_EQ(p.prefill[0].samples_first_token, last);
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
    ASSERT_EQ(p.prefill.size(), 1u);
    EXPECT_EQ(p.prefill[0].seq_id, 3);
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
  EXPECT_TRUE(p.prefill.empty());
  EXPECT_TRUE(p.preempted.empty());
  EXPECT_EQ(s.n_waiting(), 1);
  s.remove(1);
  const StepPlan& q = s.schedule();
  ASSERT_EQ(q.prefill.size(), 1u);
  EXPECT_EQ(q.prefill[0].seq_id, 2);
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
  ASSERT_EQ(p.prefill.size(), 1u);
  EXPECT_EQ(p.prefill[0].seq_id, 2);
  EXPECT_EQ(p.prefill[0].n_tokens, victim->n_tokens() - 1);
  EXPECT_FALSE(p.prefill[0].samples_first_token);
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
  ASSERT_EQ(p.prefill.size(), 1u);
  EXPECT_EQ(p.prefill[0].seq_id, 2);
}

TEST(Scheduler, EqualPriorityRequestDoesNotDisplace) {
  Scheduler s({32, 256, 4096}, KvLayout{16, 4});
  s.add(seq(1, 40));
  s.schedule();
  execute(s);
  s.add(seq(2, 40));
  const StepPlan& p = s.schedule();
  EXPECT_TRUE(p.preempted.empty());
  EXPECT_TRUE(p.prefill.empty());
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
    EXPECT_LE(static_cast<int>(p.decode.size()) + static_cast<int>(p.prefill.size()), 4);
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

// Packing: chunks of several sequences in one step.
SchedulerConfig packing(int32_t chunk_tokens, int32_t step_tokens, int32_t max_seqs) {
  SchedulerConfig c;
  c.prefill_chunk_tokens = chunk_tokens;
  c.prefill_step_tokens = step_tokens;
  c.max_prefill_seqs = max_seqs;
  return c;
}

TEST(Scheduler, ShortPromptsShareAStepWithinTheTokenBudget) {
  Scheduler s(packing(256, 512, 8), KvLayout{16, 512});
  for (int i = 1; i <= 6; ++i) s.add(seq(i, 128));
  const StepPlan& p = s.schedule();
  ASSERT_EQ(p.prefill.size(), 4u);  // 4 x 128 = the 512-token budget
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p.prefill[i].seq_id, static_cast<int64_t>(i + 1));  // arrival order
    EXPECT_EQ(p.prefill[i].n_past, 0);
    EXPECT_EQ(p.prefill[i].n_tokens, 128);
    EXPECT_TRUE(p.prefill[i].samples_first_token);
  }
  EXPECT_EQ(s.n_waiting(), 2);
  execute(s);
  const StepPlan& q = s.schedule();
  EXPECT_EQ(q.decode.size(), 4u);
  ASSERT_EQ(q.prefill.size(), 2u);
  EXPECT_EQ(q.prefill[0].seq_id, 5);
  EXPECT_EQ(q.prefill[1].seq_id, 6);
  execute(s);
  EXPECT_EQ(s.schedule().decode.size(), 6u);
}

TEST(Scheduler, PackingNeverExceedsTheSequenceCap) {
  Scheduler s(packing(256, 512, 3), KvLayout{16, 512});
  for (int i = 1; i <= 5; ++i) s.add(seq(i, 10));
  EXPECT_EQ(s.schedule().prefill.size(), 3u);
}

// Every sequence's chunks (start, length) are the ones it gets alone, whatever shares its
// steps: what a chunk computes never depends on the other conversations.
TEST(Scheduler, ASequencesChunksDoNotDependOnPacking) {
  const std::vector<int> prompts = {300, 100, 700, 40, 256, 513};
  using Chunks = std::vector<std::pair<int32_t, int32_t>>;
  const auto chunks_of = [&](const SchedulerConfig& config, const std::vector<int>& ids) {
    Scheduler s(config, KvLayout{16, 1024});
    for (int id : ids) s.add(seq(id, prompts[static_cast<size_t>(id)]));
    std::map<int64_t, Chunks> out;
    for (int step = 0; step < 100 && s.has_work(); ++step) {
      const StepPlan& p = s.schedule();
      int32_t n_step = 0;
      std::set<int64_t> seen;
      for (const PlannedPrefill& c : p.prefill) {
        out[c.seq_id].push_back({c.n_past, c.n_tokens});
        n_step += c.n_tokens;
        EXPECT_TRUE(seen.insert(c.seq_id).second) << "two chunks of one sequence in a step";
      }
      EXPECT_LE(n_step, config.prefill_step_tokens > 0 ? config.prefill_step_tokens : 256);
      execute(s);
      for (const PlannedDecode& d : p.decode) {
        if (d.n_past > 800) s.remove(d.seq_id);
      }
    }
    return out;
  };
  std::vector<int> all(prompts.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  const auto packed = chunks_of(packing(256, 512, 8), all);
  for (int id : all) {
    const auto solo = chunks_of(packing(256, 256, 1), {id});
    EXPECT_EQ(packed.at(id), solo.at(id)) << "sequence " << id;
  }
}

// The first waiting prompt whose chunk does not fit ends the step's admissions: shorter ones
// behind it do not overtake it.
TEST(Scheduler, APromptThatDoesNotFitIsNotOvertaken) {
  Scheduler s(packing(512, 512, 8), KvLayout{16, 512});
  s.add(seq(1, 300));
  s.add(seq(2, 300));
  s.add(seq(3, 10));
  const StepPlan& p = s.schedule();
  ASSERT_EQ(p.prefill.size(), 1u);
  EXPECT_EQ(p.prefill[0].seq_id, 1);
  execute(s);
  const StepPlan& q = s.schedule();
  ASSERT_EQ(q.prefill.size(), 2u);
  EXPECT_EQ(q.prefill[0].seq_id, 2);
  EXPECT_EQ(q.prefill[1].seq_id, 3);
}

// Admitting a higher-priority prompt may displace a prompt whose chunk was already planned
// for this step: that chunk leaves the plan with it.
TEST(Scheduler, DisplacedPromptLeavesTheStepsPlan) {
  SchedulerConfig c = packing(64, 128, 4);
  Scheduler s(c, KvLayout{16, 8});  // 128 slots
  s.add(seq(1, 100, /*priority=*/0));
  s.schedule();
  execute(s);  // first 64 tokens of 1; it holds 7 blocks
  s.add(seq(2, 40, /*priority=*/5));
  const StepPlan& p = s.schedule();
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], 1);
  ASSERT_EQ(p.prefill.size(), 1u);
  EXPECT_EQ(p.prefill[0].seq_id, 2);
  EXPECT_EQ(p.prefill[0].n_tokens, 40);
  execute(s);
  EXPECT_EQ(s.find(1)->phase, SeqPhase::Waiting);
  EXPECT_EQ(s.find(1)->n_computed, 0);
}

}  // namespace
}  // namespace chorus
