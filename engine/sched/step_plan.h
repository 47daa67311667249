#pragma once
// What one engine step does, as plain data: schedule() produces it, the engine executes it
// on the backend, update() applies the outputs. Tests read it to check the policy.
#include <cstdint>
#include <vector>

#include "engine/sched/engine_api.h"

namespace chorus {

struct PlannedDecode {
  int64_t seq_id = 0;
  int32_t n_past = 0;       // position of the input token
  int32_t input_token = 0;
};

struct PlannedPrefill {
  int64_t seq_id = 0;
  int32_t n_past = 0;       // first position of the chunk
  int32_t n_tokens = 0;     // chunk length
  bool samples_first_token = false;  // last chunk of a fresh prompt
};

// A sequence the scheduler had to end by itself (its blocks are already freed).
struct PlannedFinish {
  int64_t seq_id = 0;
  FinishReason reason = FinishReason::ContextFull;
};

struct StepPlan {
  std::vector<PlannedDecode> decode;       // [M] sequences decoding one token each
  // Prompt chunks of different sequences, computed in one backend call; at most one chunk
  // per sequence, within the scheduler's step budget.
  std::vector<PlannedPrefill> prefill;
  std::vector<int64_t> preempted;          // lost their blocks this step; recomputed later
  std::vector<PlannedFinish> finished;

  bool has_backend_work() const { return !decode.empty() || !prefill.empty(); }
  int32_t n_prefill_tokens() const {
    int32_t n = 0;
    for (const PlannedPrefill& p : prefill) n += p.n_tokens;
    return n;
  }
  void clear() {
    decode.clear();
    prefill.clear();
    preempted.clear();
    finished.clear();
  }
};

}  // namespace chorus
