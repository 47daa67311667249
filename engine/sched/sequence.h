#pragma once
// One request as the scheduler sees it: its tokens, how many of them are in the KV cache,
// and the blocks holding them.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/sample/sampling_params.h"

namespace chorus {

enum class SeqPhase {
  Waiting,     // no KV blocks; new, or preempted and waiting to be recomputed
  Prefilling,  // owns blocks for its whole prompt; chunks are being computed
  Running,     // decodes one token per step
};

struct Sequence {
  int64_t id = 0;
  int32_t priority = 0;    // higher runs first and is preempted last
  uint64_t arrival = 0;    // submit order: earlier first among equal priority
  SamplingParams sampling;

  std::vector<int32_t> tokens;  // prompt, then every generated token
  int32_t n_prompt = 0;
  int32_t n_computed = 0;       // leading tokens whose KV is in the cache
  std::vector<int32_t> block_table;
  SeqPhase phase = SeqPhase::Waiting;
  int32_t n_preemptions = 0;

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t n_generated() const { return n_tokens() - n_prompt; }

  // Tokens a (re)prefill must put into the cache. A fresh sequence prefills its prompt and
  // samples its first token from the last row. A preempted one recomputes everything but
  // its last generated token, which stays the input of its next decode, so recompute never
  // samples again and the output is the same as without preemption.
  int32_t prefill_target() const { return n_generated() == 0 ? n_prompt : n_tokens() - 1; }
  bool prefill_samples() const { return n_generated() == 0; }

  // The most recent tokens, for repetition penalties.
  std::span<const int32_t> history(int32_t n_last) const {
    const size_t n = std::min(tokens.size(), static_cast<size_t>(n_last > 0 ? n_last : 0));
    return std::span<const int32_t>(tokens).last(n);
  }

  // Ranking key: true when `this` should run before (and be preempted after) `other`.
  bool outranks(const Sequence& other) const {
    if (priority != other.priority) return priority > other.priority;
    return arrival < other.arrival;
  }
};

}  // namespace chorus
