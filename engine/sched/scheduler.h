#pragma once
// Continuous-batching scheduler, vLLM-shaped. Each step, schedule() picks the running
// sequences that decode (growing their block tables, preempting the lowest-ranked ones when
// the cache is full) and at most one prompt chunk, so a long prompt is spread over several
// steps while running conversations keep streaming. The engine executes the plan and hands
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
  int32_t prefill_chunk_tokens = 256;  // longest prompt chunk of one step
  int32_t context_tokens = 4096;       // per-sequence limit: prompt + generated tokens
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
  PrefillChunk prefill_chunk() const;

  // decode_tokens[i] is the token sampled for plan().decode[i].
  void apply_decode(std::span<const int32_t> decode_tokens);
  // `sampled_token` is used when the chunk samples the first token.
  void apply_prefill(int32_t sampled_token);

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
  Sequence* prefilling_ = nullptr;   // the one sequence whose prompt is being chunked
  StepPlan plan_;
};

}  // namespace chorus
