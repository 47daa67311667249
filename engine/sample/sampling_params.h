#pragma once
// Per-request sampling settings. temperature == 0 means greedy (argmax); ties go to the
// lowest token id on every backend.
#include <cstdint>

namespace chorus {

struct SamplingParams {
  float temperature = 0.0f;
  int32_t top_k = 0;             // 0: off
  float top_p = 1.0f;            // 1: off
  float min_p = 0.0f;            // 0: off
  float repeat_penalty = 1.0f;   // 1: off (llama.cpp semantics: divide positive logits)
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t penalty_last_n = 64;   // how many recent tokens the penalties look at
  uint64_t seed = 0;

  bool is_greedy() const { return temperature <= 0.0f; }
  bool has_penalties() const {
    return repeat_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
};

}  // namespace chorus
