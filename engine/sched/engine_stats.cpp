#include "engine/sched/engine_stats.h"

#include <algorithm>

namespace chorus {
namespace {

constexpr size_t kPhases = StepStats::kPhases;

std::array<int64_t, kPhases> phases(const StepRecord& r) {
  return {r.t_schedule_us, r.t_upload_us,     r.t_forward_us, r.t_sample_us, r.t_download_us,
          r.t_prefill_us,  r.t_detokenize_us, r.t_deliver_us, r.t_step_us};
}

StepPhaseTimes from_array(const std::array<double, kPhases>& a) {
  StepPhaseTimes t;
  t.schedule_us = a[0];
  t.upload_us = a[1];
  t.forward_us = a[2];
  t.sample_us = a[3];
  t.download_us = a[4];
  t.prefill_us = a[5];
  t.detokenize_us = a[6];
  t.deliver_us = a[7];
  t.step_us = a[8];
  return t;
}

// Phase sums of n steps as their mean (n > 0).
StepPhaseTimes mean_of_sums(const std::array<int64_t, kPhases>& sum, int64_t n) {
  std::array<double, kPhases> a{};
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(sum[i]) / static_cast<double>(n);
  return from_array(a);
}

}  // namespace

StepPhaseTimes mean_phase_times(std::span<const StepRecord> records) {
  if (records.empty()) return {};
  std::array<int64_t, kPhases> sum{};
  for (const StepRecord& r : records) {
    const auto p = phases(r);
    for (size_t i = 0; i < p.size(); ++i) sum[i] += p[i];
  }
  return mean_of_sums(sum, static_cast<int64_t>(records.size()));
}

StepPhaseTimes to_phase_times(const StepRecord& r) {
  std::array<double, kPhases> a{};
  const auto p = phases(r);
  std::copy(p.begin(), p.end(), a.begin());
  return from_array(a);
}

void StepStats::add_to_mean(const StepRecord& r, int64_t sign) {
  const auto p = phases(r);
  for (size_t i = 0; i < p.size(); ++i) mean_sum_[i] += sign * p[i];
}

void StepStats::drop_oldest_from_window() {
  const StepRecord& r = at(window_first_);
  window_decoded_ -= r.n_decode;
  window_prefilled_ -= r.n_prefill_tokens;
  window_prefill_us_ -= r.t_prefill_us;
  ++window_first_;
}

void StepStats::add(const StepRecord& r) {
  if (n_steps_ >= kMeanSteps) add_to_mean(at(n_steps_ - kMeanSteps), -1);
  // The slot being overwritten may still be in the rate window; drop it first.
  if (n_steps_ - window_first_ >= kRing) drop_oldest_from_window();
  ring_[static_cast<size_t>(n_steps_ % kRing)] = r;
  ++n_steps_;
  add_to_mean(r, +1);
  n_generated_total_ += r.n_generated;
  max_batch_seen_ = std::max(max_batch_seen_, r.n_decode);
  last_end_us_ = r.t_start_us + r.t_step_us;
  window_decoded_ += r.n_decode;
  window_prefilled_ += r.n_prefill_tokens;
  window_prefill_us_ += r.t_prefill_us;
  while (window_first_ < n_steps_ - 1 &&
         at(window_first_).t_start_us + at(window_first_).t_step_us < last_end_us_ - kWindowUs) {
    drop_oldest_from_window();
  }
}

StepPhaseTimes StepStats::last() const {
  return n_steps_ == 0 ? StepPhaseTimes{} : to_phase_times(at(n_steps_ - 1));
}

StepPhaseTimes StepStats::mean() const {
  const int64_t n = std::min<int64_t>(n_steps_, kMeanSteps);
  if (n == 0) return {};
  return mean_of_sums(mean_sum_, n);
}

double StepStats::rate(int64_t n, int64_t now_us) const {
  if (n_steps_ == 0 || now_us - last_end_us_ > kWindowUs) return 0.0;
  const int64_t span_us = now_us - at(window_first_).t_start_us;
  return span_us > 0 ? static_cast<double>(n) * 1e6 / static_cast<double>(span_us) : 0.0;
}

double StepStats::decode_tok_per_s(int64_t now_us) const { return rate(window_decoded_, now_us); }
double StepStats::prefill_tok_per_s(int64_t now_us) const {
  if (n_steps_ == 0 || now_us - last_end_us_ > kWindowUs || window_prefill_us_ <= 0) return 0.0;
  return static_cast<double>(window_prefilled_) * 1e6 / static_cast<double>(window_prefill_us_);
}

}  // namespace chorus
