#pragma once
// A deterministic stand-in for the real engine: implements chorus::EngineApi, replies with
// a scripted Markdown text derived from the last user message, and emits tokens from its
// own worker thread in batched "steps" at a controllable rate. UI tests and
// `chorus --fake-engine` use it; it contains no Qt so it behaves like the real engine
// (callbacks arrive on a foreign thread).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/sched/engine_api.h"

namespace chorus::ui {

struct FakeEngineOptions {
  int64_t step_interval_us = 5'000;  // one token per running request per step
  int32_t tokens_per_step = 1;       // >1 makes bursts (coalescing tests)
  int64_t load_delay_ms = 0;         // load_model sleeps this long (busy-indicator tests)
  bool trace_tokens = false;         // print "fake-token <id> <n>" to stdout per token
  int32_t filler_sentences = 120;    // length of the scripted reply's plain-text tail
};

class FakeEngine final : public EngineApi {
 public:
  explicit FakeEngine(FakeEngineOptions options = {});
  ~FakeEngine() override;
  FakeEngine(const FakeEngine&) = delete;
  FakeEngine& operator=(const FakeEngine&) = delete;

  // An empty path loads a built-in "fake model"; any other path must name an existing file.
  Status load_model(const LoadOptions& options) override;
  RequestId submit(Request request, RequestCallbacks callbacks) override;
  void cancel(RequestId id) override;
  StatsSnapshot stats() const override;

  // The token texts the fake replies with for `request` (before max_tokens applies).
  static std::vector<std::string> scripted_reply(const Request& request,
                                                 int32_t filler_sentences = 120);

  // Test hooks.
  std::vector<Request> submitted_requests() const;
  LoadOptions last_load_options() const;
  void set_step_interval_us(int64_t us);

 private:
  struct Active {
    RequestId id = 0;
    std::vector<std::string> tokens;
    size_t next = 0;
    int32_t max_tokens = 0;
    int32_t n_prompt_tokens = 0;
    bool cancelled = false;
    bool context_full = false;  // the prompt alone fills the loaded context (as the engine ends it)
    int64_t t_submit_us = 0;
    RequestStats stats;
    std::shared_ptr<RequestCallbacks> callbacks;
  };
  struct Emission {  // work done by one step, delivered outside the lock
    std::shared_ptr<RequestCallbacks> callbacks;  // outlives the request's queue slot
    TokenDelta delta;
    bool finished = false;
    FinishReason reason = FinishReason::EndOfGeneration;
    RequestStats stats;
  };

  void run();
  void step_locked(std::vector<Emission>& out);
  void deliver(const std::vector<Emission>& out) const;

  FakeEngineOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool loaded_ = false;
  std::string model_name_;
  LoadOptions last_load_;
  RequestId next_id_ = 1;
  std::deque<Active> active_;
  std::vector<Request> submitted_;
  int32_t current_batch_ = 0, max_batch_ = 0;
  int64_t n_steps_ = 0, n_tokens_ = 0;
  std::deque<std::pair<int64_t, int32_t>> recent_;  // (t_us, tokens) of recent steps
  std::thread worker_;
};

}  // namespace chorus::ui
