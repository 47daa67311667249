#pragma once
// Hand-made step records, for tests of the figures computed from them.
#include <algorithm>
#include <cstdint>

#include "engine/sched/engine_stats.h"

namespace chorus::test {

// A step of `t_step_us` from `t_start_us` in which `n_decode` sequences decoded and
// `n_prefill_tokens` prompt tokens took `t_prefill_us`; the rest of the step is forward.
inline StepRecord make_step(int64_t t_start_us, int64_t t_step_us, int32_t n_decode, int32_t n_prefill_tokens,
                            int64_t t_prefill_us) {
  StepRecord r;
  r.t_start_us = t_start_us;
  r.t_step_us = t_step_us;
  r.n_decode = n_decode;
  r.n_generated = n_decode;
  r.n_prefill_tokens = n_prefill_tokens;
  r.t_prefill_us = t_prefill_us;
  r.t_forward_us = std::max<int64_t>(0, t_step_us - t_prefill_us);
  return r;
}

}  // namespace chorus::test
