#pragma once
// The engine's single-threaded heart: one loaded model (backend + codec), the scheduler and
// the live requests. step() runs one timed iteration: schedule, backend, detokenize and
// stop checks, delivery. `Engine` drives it from its thread; tests may drive it directly.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/sched/engine_stats.h"
#include "engine/sched/request_state.h"
#include "engine/sched/scheduler.h"
#include "engine/sched/text_codec.h"

namespace chorus {

struct EngineCoreConfig {
  int32_t context_tokens = 4096;
  int32_t prefill_chunk_tokens = 256;
  int32_t max_prefill_seqs = 0;  // 0: Backend::max_prefill_seqs()
  std::string model_name;
};

int64_t monotonic_us();

class EngineCore {
 public:
  EngineCore(std::unique_ptr<Backend> backend, std::unique_ptr<TextCodec> codec,
             const EngineCoreConfig& config);
  ~EngineCore();

  // Admits a request, or finishes it at once (bad request, prompt beyond the context).
  void submit(RequestId id, Request request, RequestCallbacks callbacks, int64_t t_submit_us);
  void cancel(RequestId id);
  void cancel_all();

  bool has_work() const { return scheduler_.has_work(); }
  StepRecord step();
  const StepPlan& last_plan() const { return scheduler_.plan(); }
  void fill_stats(StatsSnapshot& out, int64_t now_us);
  int32_t context_limit() const { return scheduler_.context_limit(); }
  int64_t last_step_end_us() const { return stats_.last_step_end_us(); }

 private:
  Result<std::vector<int32_t>> prompt_of(Request& request);
  void note_plan_events();
  void run_backend(StepRecord& rec);
  void apply_outputs(int64_t now_us);
  void on_token(RequestState& r, int32_t token, int64_t now_us);
  void end_request(RequestState& r, FinishReason reason);
  void fail_request(int64_t id, const Error& error);
  void touch(RequestState& r);
  void deliver();
  void finish_now(RequestState& r);
  void refresh_stats(RequestState& r) const;
  RequestState* find(int64_t id);

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<TextCodec> codec_;
  EngineCoreConfig config_;
  Scheduler scheduler_;
  std::unordered_map<RequestId, std::unique_ptr<RequestState>> requests_;
  std::vector<RequestState*> touched_;  // requests with something to deliver this step
  StepStats stats_;

  // Backend inputs and outputs, reused across steps.
  DecodeBatch batch_;
  Result<DecodeResult> decode_result_{DecodeResult{}};
  std::vector<PrefillChunk> chunks_;
  Result<std::vector<PrefillResult>> prefill_result_{std::vector<PrefillResult>{}};
  std::vector<int32_t> prefill_tokens_;  // [chunks]: each chunk's sampled token (-1: none)

  BackendMemory memory_;
  int64_t t_memory_polled_us_ = -1;
  std::string backend_name_, device_name_;
  int32_t last_n_decode_ = 0;
};

}  // namespace chorus
