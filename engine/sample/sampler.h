#pragma once
// Token sampling from one row of logits: penalties, then greedy or temperature / top-k /
// top-p / min-p with a counter-based seeded draw. Same inputs, same token.
#include <cstdint>
#include <span>

#include "engine/sample/sampling_params.h"

namespace chorus {

// `logits` is modified in place (penalties, temperature). `history` holds the request's
// recent tokens (prompt and generated) for the penalties; `draw_index` picks the random draw.
int32_t sample_token(std::span<float> logits, const SamplingParams& params,
                     std::span<const int32_t> history, uint64_t draw_index);

// Index of the largest value; ties go to the lowest index.
int32_t argmax(std::span<const float> values);

// Applies repetition (llama.cpp semantics), presence and frequency penalties over the last
// params.penalty_last_n tokens of history.
void apply_penalties(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> history);

}  // namespace chorus
