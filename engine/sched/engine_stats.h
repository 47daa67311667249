#pragma once
// Step statistics kept by the engine thread: the last step, a running mean over recent
// steps and token rates over a sliding time window. Fixed-size rings and running sums, so
// recording a step costs a few additions and never allocates.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/sched/engine_api.h"

namespace chorus {

// One step, as timed by the engine. The phases are contiguous, so their sum is the step.
struct StepRecord {
  int64_t index = 0;
  int32_t n_decode = 0;          // M: sequences that decoded a token
  int32_t n_prefill_tokens = 0;  // prompt tokens of the step's chunks (0: none)
  int32_t n_prefill_seqs = 0;    // sequences those chunks belong to
  int32_t n_generated = 0;       // tokens produced: M, plus one when the chunk sampled
  int64_t t_start_us = 0;        // monotonic clock
  // upload, forward, sample and download: the decode call. prefill: the prompt chunks' call
  // after it (0: the step had none), apart so that a decode rate can leave it out.
  int64_t t_schedule_us = 0, t_upload_us = 0, t_forward_us = 0, t_sample_us = 0,
          t_download_us = 0, t_prefill_us = 0, t_detokenize_us = 0, t_deliver_us = 0;
  int64_t t_step_us = 0;         // end - start

  int64_t sum_phases_us() const {
    return t_schedule_us + t_upload_us + t_forward_us + t_sample_us + t_download_us +
           t_prefill_us + t_detokenize_us + t_deliver_us;
  }
};

StepPhaseTimes to_phase_times(const StepRecord& r);
// Mean phase times of `records` (zeros when there are none).
StepPhaseTimes mean_phase_times(std::span<const StepRecord> records);

class StepStats {
 public:
  static constexpr int kMeanSteps = 64;           // steps in the running mean
  static constexpr int64_t kWindowUs = 3000000;   // token-rate window
  static constexpr size_t kPhases = 9;             // StepRecord's eight phases and the step

  void add(const StepRecord& r);

  int64_t n_steps() const { return n_steps_; }
  int64_t n_tokens_generated() const { return n_generated_total_; }
  int32_t max_batch_seen() const { return max_batch_seen_; }
  StepPhaseTimes last() const;
  StepPhaseTimes mean() const;
  // Decoded tokens per second of wall time over the window ending at `now_us`; 0 when
  // nothing ran in it.
  double decode_tok_per_s(int64_t now_us) const;
  // Prompt tokens per second of prompt computation (the prefill phase) over the same window:
  // how fast prompts are computed, which a wall-time rate of bursty prompts would not say.
  // 0 when no prompt was computed in it.
  double prefill_tok_per_s(int64_t now_us) const;
  int64_t last_step_end_us() const { return last_end_us_; }

 private:
  static constexpr int kRing = 4096;  // must exceed kMeanSteps
  const StepRecord& at(int64_t step) const { return ring_[static_cast<size_t>(step % kRing)]; }
  void add_to_mean(const StepRecord& r, int64_t sign);
  void drop_oldest_from_window();
  double rate(int64_t n, int64_t now_us) const;

  std::array<StepRecord, kRing> ring_{};
  int64_t n_steps_ = 0;
  int64_t n_generated_total_ = 0;
  int32_t max_batch_seen_ = 0;
  int64_t last_end_us_ = 0;
  std::array<int64_t, kPhases> mean_sum_{};  // over the last kMeanSteps
  int64_t window_first_ = 0;           // oldest step inside the rate window
  int64_t window_decoded_ = 0, window_prefilled_ = 0, window_prefill_us_ = 0;
};

}  // namespace chorus
