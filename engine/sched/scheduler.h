#pragma once
// Continuous-batching scheduler, vLLM-shaped. Each step, schedule() picks the running
// sequences that decode (growing their block tables, preempting the lowest-ranked ones when
// the cache is full) and prompt chunks within a token budget, so a long prompt is spread
// over several steps while running conversations keep streaming, and several short prompts
// arriving together share one pass over the weights. The engine executes the plan and hands
// the sampled tokens back through apply_decode()/apply_prefill(). Not thread-safe: it lives
// on the engine thread.
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/sched/kv_block_allocator.h"
#include "engine/sched/sequence.h"
#include "engine/sched/step_plan.h"

namespace chorus {

struct SchedulerConfig {
  int32_t max_batch = 32;              // most sequences holding blocks or decoding at once
  int32_t prefill_chunk_tokens = 256;  // longest prompt chunk of one sequence in one step
  int32_t context_tokens = 4096;       // per-sequence limit: prompt + generated tokens
  // Chunks of up to `max_prefill_seqs` sequences share a step while their tokens fit in
  // `prefill_step_tokens` (0: prefill_chunk_tokens). A sequence's prompt is cut into chunks
  // by prefill_chunk_tokens and its own length only, never by what budget is left, so its
  // chunks (and what they compute) are the same whether it runs alone or with others.
  int32_t prefill_step_tokens = 0;
  int32_t max_prefill_seqs = 1;
};

struct NewSequence {
  int64_t id = 0;
  std::vector<int32_t> prompt;  // not empty, shorter than context_limit()
  int32_t priority = 0;
  SamplingParams sampling;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, const KvLayout& kv);

  // The per-sequence token limit actually enforced: the configured context, capped by what
  // the whole cache can hold, so that a sequence alone always fits.
  int32_t context_limit() const { return context_limit_; }

  void add(NewSequence seq);
  // Removes a sequence wherever it is and frees its blocks. Unknown ids are ignored.
  void remove(int64_t id);

  const StepPlan& schedule();
  // The backend inputs of the current plan; spans point into the scheduler's sequences and
  // stay valid until the next schedule()/apply/remove call.
  void fill_decode_batch(DecodeBatch& batch) const;
  PrefillChunk prefill_chunk(size_t i) const;  // of plan().prefill[i]

  // decode_tokens[i] is the token sampled for plan().decode[i].
  void apply_decode(std::span<const int32_t> decode_tokens);
  // sampled_tokens[i] belongs to plan().prefill[i]; used where that chunk samples the first token.
  void apply_prefill(std::span<const int32_t> sampled_tokens);

  const StepPlan& plan() const { return plan_; }
  const Sequence* find(int64_t id) const;
  bool has_work() const { return !seqs_.empty(); }
  int32_t n_running() const;
  int32_t n_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  const KvBlockAllocator& allocator() const { return alloc_; }

 private:
  Sequence* find_mut(int64_t id);
  void plan_decodes();
  void plan_prefill();
  bool admit_next();
  bool plan_chunk(Sequence* s);  // false when its next chunk does not fit the step's budget
  int32_t next_chunk_tokens(const Sequence& s) const;
  Sequence* lowest_victim(size_t first_running, const Sequence* exclude) const;
  void preempt(Sequence* s);
  void force_finish(Sequence* s, FinishReason reason);
  void erase(Sequence* s);
  void insert_waiting(Sequence* s);
  int32_t n_holding_blocks() const;

  SchedulerConfig config_;
  KvLayout kv_;
  int32_t context_limit_ = 0;
  KvBlockAllocator alloc_;
  uint64_t next_arrival_ = 0;

  std::unordered_map<int64_t, std::unique_ptr<Sequence>> seqs_;
  std::vector<Sequence*> running_;   // ranked, best first
  std::vector<Sequence*> waiting_;   // ranked, best first
  std::vector<Sequence*> prefilling_;  // prompts being chunked, in admission order
  StepPlan plan_;
};

}  // namespace chorus
