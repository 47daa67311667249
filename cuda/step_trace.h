#pragma once
// A decode step's timeline as the GPU ran it, for measurements (chorus-cuda-bench --trace).
// ncu profiles one kernel at a time with caches flushed, so it cannot show what a replayed
// graph of ~160 launches chained by PDL spends between and across its launches. Here each
// traced launch gets a TraceSpan that its blocks stamp with the global timer: the first
// block's entry, the first return from pdl_wait (the moment the previous launch's results
// were released to this one) and the last block's exit. From consecutive launches follow:
//   gap   = release - previous exit   (the dependency hand-over: grid completion, flush, release)
//   body  = exit - release            (the launch's own work once it may start)
//   lead  = release - entry           (how long its blocks were resident before the release)
//   crit  = exit - previous exit      (its share of the step's critical path: gap + body)
// The crit values of a step add up to the step (first release -> last exit).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda/device_memory.h"
#include "cuda/trace_span.h"

namespace chorus::cuda {

// One traced launch of a step, as read back.
struct TraceRecord {
  std::string label;       // what the launch computes: "qkv", "attn", "o", "ffn_up", "down", "lm_head", "norm"
  int64_t size_bytes = 0;  // weight bytes it reads (0 where it reads none)
  bool stamped = false;    // false: no block wrote the span (a launch captured without tracing)
  std::string weight_types = {};  // its weights' types, "+" between two ("Q4_K+Q6_K"); "" where it reads none
  // Global timer, ns: the first and the last block to enter, to return from pdl_wait, to exit.
  uint64_t entry_ns = 0, last_entry_ns = 0, release_ns = 0, last_release_ns = 0, first_exit_ns = 0, exit_ns = 0;
  // Phases inside the blocks (step_trace.cuh), first and last block; 0 where none stamped it.
  uint64_t phase_first_ns[kTracePhases] = {}, phase_last_ns[kTracePhases] = {};
  // Where its blocks ran: multiprocessors that got at least one, and the most one got.
  int32_t sms_used = 0, max_blocks_per_sm = 0;
  // Multiprocessors by the blocks they ran (class c: c + 1 blocks, the last class that many or
  // more): how many, and when their last block reached phase 2: the earliest of them, the
  // mean and the latest (0 where the class is empty or phase 2 is not stamped).
  struct SmClass {
    int32_t sms = 0, sms_stamped = 0;
    uint64_t phase2_first_ns = 0, phase2_last_ns = 0;
    double phase2_mean_ns = 0;
  };
  SmClass sm_classes[kTraceSmClasses] = {};
};

// Per label and weight types over a run of steps (a q4_k_m model's Q4_K and Q6_K ffn_down
// launches are separate rows: their kernels differ).
struct TraceRow {
  std::string label;  // "down", or with weight types "down:Q6_K"
  double launches_per_step = 0;
  double size_mb_per_step = 0;  // weight MB read per step by this label's launches
  double crit_us_per_step = 0;  // its share of the step's critical path
  // Means per launch: gap, body and lead as in the file comment; then, from the first release,
  // when the last block entered (late blocks were not resident at the release), when the last
  // block passed pdl_wait, and when the first block was done.
  double gap_us = 0, body_us = 0, lead_us = 0, last_entry_us = 0, last_release_us = 0, first_exit_us = 0;
  double sms_used = 0, max_blocks_per_sm = 0;  // means per launch (TraceRecord)
  // Per class of multiprocessor (TraceRecord::SmClass): the mean count per launch, and when
  // their last blocks reached phase 2, us from the first release: the earliest, the mean and
  // the latest of the class, each a mean over the launches where the class had stamps.
  struct SmClassRow {
    double sms = 0, stamped_launches = 0;  // stamped_launches: per step, those with phase 2 stamps
    double phase2_first_us = 0, phase2_mean_us = 0, phase2_last_us = 0;
  };
  SmClassRow sm_classes[kTraceSmClasses];
  // Phase k reached by the first and by the last block, us from the first release (means over
  // the launches that stamped it; phase_launches[k] of them per step).
  double phase_first_us[kTracePhases] = {}, phase_last_us[kTracePhases] = {};
  double phase_launches[kTracePhases] = {};
};

struct TraceSummary {
  int n_steps = 0;
  double step_us = 0;          // mean first release -> last exit
  std::vector<TraceRow> rows;  // in order of first appearance in a step
  double timer_1us_share = 0;  // share of stamps that are whole microseconds (1.0: the timer ticks in us)
};

// Launches are summed per label and weight types; steps with an unstamped launch are skipped. An empty input
// gives n_steps = 0.
TraceSummary summarize_trace(std::span<const std::vector<TraceRecord>> steps);
std::string format_trace(const TraceSummary& s);

// The device side: a span per launch of one enqueued step, and the labels beside them. Only
// builds with kStepTraceBuilt stamp the spans.
class StepTrace {
 public:
  explicit StepTrace(int32_t max_launches) : spans_(static_cast<size_t>(max_launches)) {}
  // Between these two calls the launches being enqueued take consecutive spans (a graph
  // captured then keeps their addresses); outside them slot() gives nullptr.
  void begin_enqueue() {
    launches_.clear();
    enqueuing_ = true;
  }
  void end_enqueue() { enqueuing_ = false; }
  // nullptr when not enqueuing or full.
  TraceSpan* slot(const char* label, int64_t size_bytes, std::string weight_types = {});
  void arm(cudaStream_t s);                                 // every span, before a step's launches run
  std::vector<TraceRecord> read(cudaStream_t s) const;      // waits for the stream
 private:
  struct Launch {
    const char* label;
    int64_t size_bytes;
    std::string weight_types;
  };
  DeviceBuffer<TraceSpan> spans_;
  std::vector<Launch> launches_;
  bool enqueuing_ = false;
};

}  // namespace chorus::cuda
