#pragma once
// chorus::Engine: EngineApi on a background engine thread. submit/cancel/stats are
// thread-safe and cheap (they post to an inbox); the engine thread loads models, runs the
// steps and invokes the callbacks. The backend and text codec come from injected
// factories, so tests run on fakes and default_engine.h wires the real ones.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/sched/engine_api.h"
#include "engine/sched/engine_stats.h"
#include "engine/sched/step_plan.h"
#include "engine/sched/text_codec.h"

namespace chorus {

class EngineCore;

using BackendFactory = std::function<Result<std::unique_ptr<Backend>>(const LoadOptions&)>;
using CodecFactory = std::function<Result<std::unique_ptr<TextCodec>>(const LoadOptions&)>;
// Called on the engine thread after every step, with the plan that step executed.
using StepObserver = std::function<void(const StepRecord&, const StepPlan&)>;

struct EngineOptions {
  BackendFactory make_backend;
  CodecFactory make_codec;
  int32_t prefill_chunk_tokens = 256;
  int32_t max_prefill_seqs = 0;  // most sequences' chunks per prefill call; 0: what the backend takes
  StepObserver on_step;  // optional; must not block
};

class Engine final : public EngineApi {
 public:
  explicit Engine(EngineOptions options);
  // Cancels every remaining request (their on_finish runs) and joins the engine thread.
  // Must not be called from a callback.
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Status load_model(const LoadOptions& options) override;
  RequestId submit(Request request, RequestCallbacks callbacks) override;
  void cancel(RequestId id) override;
  StatsSnapshot stats() const override;

  // Blocks until every request submitted so far has finished.
  void wait_idle();

 private:
  struct Command;
  void thread_main();
  void run_commands(std::vector<Command>& commands);
  Status do_load(const LoadOptions& options);
  void publish_stats();
  void shut_down(std::vector<Command>& commands);

  EngineOptions options_;

  mutable std::mutex mu_;  // guards everything up to the next comment
  std::condition_variable wake_;
  std::condition_variable idle_cv_;
  std::vector<Command> inbox_;
  bool stop_ = false;
  bool idle_ = true;        // no request in the inbox or the core
  RequestId next_id_ = 1;

  // Engine thread only.
  std::unique_ptr<EngineCore> core_;
  StatsSnapshot scratch_stats_;

  mutable std::mutex stats_mu_;
  StatsSnapshot published_;
  int64_t published_last_step_end_us_ = 0;

  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace chorus
