#pragma once
// Decode throughput of a run, from the records of its steps. Two figures, because a step can
// both decode and compute prompt chunks (chunked prefill shares steps with running streams):
//  - step rate: decoded tokens over the whole time of the steps that decoded, the prompt
//    chunks computed in those steps included; what the run delivered while streams decoded.
//  - decode rate: decoded tokens over the same steps' time less their prompt-chunk calls;
//    the decode work alone. llama-batched-bench's generation figure (S_TG) counts its
//    generation time the same way, with every prompt processed before it, apart.
// Tokens sampled at the end of a prompt are not decoded tokens and count in neither.
#include <cstdint>
#include <span>

#include "engine/sched/engine_stats.h"

namespace chorus {

struct DecodeRates {
  int64_t n_decoded = 0;            // tokens from decode steps, all sequences
  int64_t n_decode_steps = 0;       // steps with at least one sequence decoding
  int64_t t_decode_steps_us = 0;    // their whole time
  int64_t t_prefill_shared_us = 0;  // of it: prompt-chunk calls inside those steps

  // Tokens per second; 0 when nothing decoded.
  double step_tok_per_s() const;
  double decode_tok_per_s() const;
};

DecodeRates decode_rates(std::span<const StepRecord> steps);

}  // namespace chorus
