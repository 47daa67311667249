#pragma once
// Runs one sequence through a backend without the scheduler: the path behind
// `chorus-cli logits` / `generate` and the reference side of batch-invariance checks.
// The sequence owns KV blocks 0..n-1, so nothing else may use the backend meanwhile.
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/backend/backend.h"

namespace chorus {

struct SoloRunOptions {
  LogitsMode prompt_logits = LogitsMode::None;  // Return: every prompt row's logits
  int32_t n_generate = 0;                       // greedy tokens after the prompt
  SamplingParams sampling;                      // default: greedy
  // Called with each generated token as soon as it is sampled; returning false stops
  // generation after that token (end of generation, user interrupt).
  std::function<bool(int32_t)> on_token;
};

struct SoloRunResult {
  std::vector<float> prompt_logits;  // [n_prompt][n_vocab] when asked
  std::vector<int32_t> generated;    // [n_generate]
};

Result<SoloRunResult> solo_run(Backend& backend, const std::vector<int32_t>& prompt, const SoloRunOptions& options);

}  // namespace chorus
