#include "cuda/step_trace.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "cuda/cuda_check.h"

namespace chorus::cuda {

TraceSpan* StepTrace::slot(const char* label, int64_t size_bytes, std::string weight_types) {
  if (!enqueuing_ || launches_.size() >= spans_.size()) return nullptr;
  launches_.push_back({label, size_bytes, std::move(weight_types)});
  return spans_.get() + (launches_.size() - 1);
}

void StepTrace::arm(cudaStream_t s) {
  CHORUS_CUDA_CHECK(cudaMemsetAsync(spans_.get(), 0xff, spans_.size_bytes(), s));
}

std::vector<TraceRecord> StepTrace::read(cudaStream_t s) const {
  std::vector<TraceSpan> spans(launches_.size());
  if (!spans.empty()) {
    CHORUS_CUDA_CHECK(cudaMemcpyAsync(spans.data(), spans_.get(), spans.size() * sizeof(TraceSpan),
                                      cudaMemcpyDeviceToHost, s));
  }
  CHORUS_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<TraceRecord> out(spans.size());
  constexpr unsigned long long kUnset = ~0ull;
  for (size_t i = 0; i < spans.size(); ++i) {
    TraceRecord& r = out[i];
    r.label = launches_[i].label;
    r.size_bytes = launches_[i].size_bytes;
    r.weight_types = launches_[i].weight_types;
    const TraceSpan& sp = spans[i];
    const unsigned long long fields[] = {sp.entry_first_ns,   sp.entry_last_inv_ns, sp.release_first_ns,
                                         sp.release_last_inv_ns, sp.exit_first_ns,   sp.exit_last_inv_ns};
    r.stamped = std::none_of(std::begin(fields), std::end(fields), [](unsigned long long f) { return f == kUnset; });
    if (!r.stamped) continue;
    r.entry_ns = sp.entry_first_ns;
    r.last_entry_ns = ~sp.entry_last_inv_ns;
    r.release_ns = sp.release_first_ns;
    r.last_release_ns = ~sp.release_last_inv_ns;
    r.first_exit_ns = sp.exit_first_ns;
    r.exit_ns = ~sp.exit_last_inv_ns;
    for (int sm = 0; sm < kTraceMaxSms; ++sm) {
      const int32_t blocks = static_cast<int32_t>(sp.sm_blocks_less1[sm] + 1u);  // ~0u armed: untouched reads 0
      if (blocks == 0) continue;
      r.sms_used += 1;
      r.max_blocks_per_sm = std::max(r.max_blocks_per_sm, blocks);
      TraceRecord::SmClass& c = r.sm_classes[std::min(blocks, kTraceSmClasses) - 1];
      c.sms += 1;
      const uint64_t done = ~sp.sm_phase2_last_inv_ns[sm];  // ~0 armed: unstamped reads 0
      if (done == 0) continue;
      c.phase2_first_ns = c.sms_stamped == 0 ? done : std::min(c.phase2_first_ns, done);
      c.phase2_last_ns = std::max(c.phase2_last_ns, done);
      c.phase2_mean_ns += (static_cast<double>(done) - c.phase2_mean_ns) / (c.sms_stamped + 1);
      c.sms_stamped += 1;
    }
    for (int k = 0; k < kTracePhases; ++k) {
      if (sp.phase_first_ns[k] == kUnset) continue;
      r.phase_first_ns[k] = sp.phase_first_ns[k];
      r.phase_last_ns[k] = ~sp.phase_last_inv_ns[k];
    }
  }
  return out;
}

TraceSummary summarize_trace(std::span<const std::vector<TraceRecord>> steps) {
  TraceSummary s;
  struct Acc {
    std::string label;
    double launches = 0, size_bytes = 0, crit_ns = 0, gap_ns = 0, body_ns = 0, lead_ns = 0;
    double last_entry_ns = 0, last_release_ns = 0, first_exit_ns = 0;  // from the first release
    double sms_used = 0, max_blocks_per_sm = 0;
    double phase_n[kTracePhases] = {}, phase_first_ns[kTracePhases] = {}, phase_last_ns[kTracePhases] = {};
    double class_sms[kTraceSmClasses] = {}, class_n[kTraceSmClasses] = {};
    double class_first_ns[kTraceSmClasses] = {}, class_mean_ns[kTraceSmClasses] = {}, class_last_ns[kTraceSmClasses] = {};
  };
  std::vector<Acc> acc;  // per label, in order of first appearance (a handful: a linear search)
  double step_ns = 0, n_stamps = 0, n_whole_us = 0;
  for (const std::vector<TraceRecord>& step : steps) {
    if (step.empty() || !std::all_of(step.begin(), step.end(), [](const TraceRecord& r) { return r.stamped; })) {
      continue;
    }
    ++s.n_steps;
    step_ns += static_cast<double>(step.back().exit_ns) - static_cast<double>(step.front().release_ns);
    for (size_t i = 0; i < step.size(); ++i) {
      const TraceRecord& r = step[i];
      // The first launch has no traced predecessor: its share starts at its own release.
      const double prev_exit = i > 0 ? static_cast<double>(step[i - 1].exit_ns) : static_cast<double>(r.release_ns);
      const std::string key = r.weight_types.empty() ? r.label : r.label + ":" + r.weight_types;
      auto it = std::find_if(acc.begin(), acc.end(), [&](const Acc& x) { return x.label == key; });
      Acc& a = it != acc.end() ? *it : acc.emplace_back(Acc{key});
      a.launches += 1;
      a.size_bytes += static_cast<double>(r.size_bytes);
      a.crit_ns += static_cast<double>(r.exit_ns) - prev_exit;
      a.gap_ns += static_cast<double>(r.release_ns) - prev_exit;
      a.body_ns += static_cast<double>(r.exit_ns) - static_cast<double>(r.release_ns);
      a.lead_ns += static_cast<double>(r.release_ns) - static_cast<double>(r.entry_ns);
      a.last_entry_ns += static_cast<double>(r.last_entry_ns) - static_cast<double>(r.release_ns);
      a.last_release_ns += static_cast<double>(r.last_release_ns) - static_cast<double>(r.release_ns);
      a.first_exit_ns += static_cast<double>(r.first_exit_ns) - static_cast<double>(r.release_ns);
      a.sms_used += r.sms_used;
      a.max_blocks_per_sm += r.max_blocks_per_sm;
      for (int k = 0; k < kTracePhases; ++k) {
        if (r.phase_first_ns[k] == 0) continue;
        a.phase_n[k] += 1;
        a.phase_first_ns[k] += static_cast<double>(r.phase_first_ns[k]) - static_cast<double>(r.release_ns);
        a.phase_last_ns[k] += static_cast<double>(r.phase_last_ns[k]) - static_cast<double>(r.release_ns);
      }
      const double rel = static_cast<double>(r.release_ns);
      for (int c = 0; c < kTraceSmClasses; ++c) {
        const TraceRecord::SmClass& k = r.sm_classes[c];
        a.class_sms[c] += k.sms;
        if (k.sms_stamped == 0) continue;
        a.class_n[c] += 1;
        a.class_first_ns[c] += static_cast<double>(k.phase2_first_ns) - rel;
        a.class_mean_ns[c] += k.phase2_mean_ns - rel;
        a.class_last_ns[c] += static_cast<double>(k.phase2_last_ns) - rel;
      }
      for (uint64_t t : {r.entry_ns, r.last_entry_ns, r.release_ns, r.last_release_ns, r.first_exit_ns, r.exit_ns}) {
        n_stamps += 1;
        n_whole_us += t % 1000 == 0 ? 1 : 0;
      }
    }
  }
  if (s.n_steps == 0) return s;
  const double n = s.n_steps;
  s.step_us = step_ns / n / 1e3;
  s.timer_1us_share = n_whole_us / n_stamps;
  for (const Acc& a : acc) {
    TraceRow r;
    r.label = a.label;
    r.launches_per_step = a.launches / n;
    r.size_mb_per_step = a.size_bytes / n / 1e6;
    r.crit_us_per_step = a.crit_ns / n / 1e3;
    r.gap_us = a.gap_ns / a.launches / 1e3;
    r.body_us = a.body_ns / a.launches / 1e3;
    r.lead_us = a.lead_ns / a.launches / 1e3;
    r.last_entry_us = a.last_entry_ns / a.launches / 1e3;
    r.last_release_us = a.last_release_ns / a.launches / 1e3;
    r.first_exit_us = a.first_exit_ns / a.launches / 1e3;
    r.sms_used = a.sms_used / a.launches;
    r.max_blocks_per_sm = a.max_blocks_per_sm / a.launches;
    for (int c = 0; c < kTraceSmClasses; ++c) {
      TraceRow::SmClassRow& k = r.sm_classes[c];
      k.sms = a.class_sms[c] / a.launches;
      if (a.class_n[c] == 0) continue;
      k.stamped_launches = a.class_n[c] / n;
      k.phase2_first_us = a.class_first_ns[c] / a.class_n[c] / 1e3;
      k.phase2_mean_us = a.class_mean_ns[c] / a.class_n[c] / 1e3;
      k.phase2_last_us = a.class_last_ns[c] / a.class_n[c] / 1e3;
    }
    for (int k = 0; k < kTracePhases; ++k) {
      if (a.phase_n[k] == 0) continue;
      r.phase_launches[k] = a.phase_n[k] / n;
      r.phase_first_us[k] = a.phase_first_ns[k] / a.phase_n[k] / 1e3;
      r.phase_last_us[k] = a.phase_last_ns[k] / a.phase_n[k] / 1e3;
    }
    s.rows.push_back(std::move(r));
  }
  return s;
}

std::string format_trace(const TraceSummary& s) {
  if (s.n_steps == 0) return "trace: no fully stamped step\n";
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "trace: %d steps, %.1f us a step (first release -> last exit)%s\n", s.n_steps,
                s.step_us, s.timer_1us_share > 0.9 ? "; the global timer ticks in whole us here" : "");
  out += line;
  out += "  (per launch, us: gap, body, lead as in cuda/step_trace.h; last in, last rl, 1st out: the last block's\n"
         "   entry, the last block's release and the first block's exit, from the launch's first release;\n"
         "   phases pK: where the first and the last block reached phase K, step_trace.cuh; SMs: multiprocessors\n"
         "   that ran a block of it, max/SM: the most blocks one of them ran; p2 per SM: when each multiprocessor's\n"
         "   last block reached phase 2, grouped by how many blocks it ran)\n";
  std::snprintf(line, sizeof line, "  %-14s %6s %8s %8s %6s %6s %7s %6s %7s %7s %7s %6s %6s %6s\n", "launch", "n/step",
                "MB/step", "crit us", "crit%", "gap", "body", "lead", "last in", "last rl", "1st out", "GB/s", "SMs",
                "max/SM");
  out += line;
  for (const TraceRow& r : s.rows) {
    const double gbps = r.crit_us_per_step > 0 ? r.size_mb_per_step / r.crit_us_per_step * 1e3 : 0;  // MB/us = TB/s
    std::snprintf(line, sizeof line,
                  "  %-14s %6.1f %8.1f %8.1f %5.1f%% %6.2f %7.2f %6.2f %7.2f %7.2f %7.2f %6.0f %6.1f %6.2f\n",
                  r.label.c_str(), r.launches_per_step, r.size_mb_per_step, r.crit_us_per_step,
                  100.0 * r.crit_us_per_step / s.step_us, r.gap_us, r.body_us, r.lead_us, r.last_entry_us,
                  r.last_release_us, r.first_exit_us, gbps, r.sms_used, r.max_blocks_per_sm);
    out += line;
    std::string phases;
    for (int k = 0; k < kTracePhases; ++k) {
      if (r.phase_launches[k] == 0) continue;
      std::snprintf(line, sizeof line, "  p%d %.2f/%.2f", k, r.phase_first_us[k], r.phase_last_us[k]);
      phases += line;
    }
    if (!phases.empty()) out += "                 phases, first/last block:" + phases + "\n";
    std::string classes;
    for (int c = 0; c < kTraceSmClasses; ++c) {
      const TraceRow::SmClassRow& k = r.sm_classes[c];
      if (k.stamped_launches == 0) continue;
      std::snprintf(line, sizeof line, "  %d%s: %.1f SMs %.2f/%.2f/%.2f", c + 1, c + 1 == kTraceSmClasses ? "+" : "",
                    k.sms, k.phase2_first_us, k.phase2_mean_us, k.phase2_last_us);
      classes += line;
    }
    if (!classes.empty()) out += "                 p2 per SM by its blocks (first/mean/last):" + classes + "\n";
  }
  return out;
}

}  // namespace chorus::cuda
