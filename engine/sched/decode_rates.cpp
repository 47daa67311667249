#include "engine/sched/decode_rates.h"

#include <algorithm>

namespace chorus {
namespace {

double per_second(int64_t n, int64_t t_us) {
  return n > 0 && t_us > 0 ? static_cast<double>(n) * 1e6 / static_cast<double>(t_us) : 0.0;
}

}  // namespace

double DecodeRates::step_tok_per_s() const { return per_second(n_decoded, t_decode_steps_us); }

double DecodeRates::decode_tok_per_s() const {
  return per_second(n_decoded, t_decode_steps_us - t_prefill_shared_us);
}

DecodeRates decode_rates(std::span<const StepRecord> steps) {
  DecodeRates r;
  for (const StepRecord& s : steps) {
    if (s.n_decode <= 0) continue;
    r.n_decoded += s.n_decode;
    r.n_decode_steps += 1;
    r.t_decode_steps_us += s.t_step_us;
    // A record whose prefill exceeds its step (not one the engine writes) cannot make the
    // decode time negative.
    r.t_prefill_shared_us += std::clamp<int64_t>(s.t_prefill_us, 0, s.t_step_us);
  }
  return r;
}

}  // namespace chorus
