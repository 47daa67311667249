#pragma once
// Shared by the test_sched_* tests: a fake-backed Engine and a thread-safe collector of
// request outcomes that tests wait on (a condition, never a sleep).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/backend/fake_backend.h"
#include "engine/sched/engine.h"
#include "engine/sched/fake_text_codec.h"

namespace chorus::test {

struct Outcome {
  std::string text;
  std::vector<int32_t> tokens;
  std::optional<FinishReason> reason;
  std::optional<std::string> error;
  RequestStats stats;
  int n_deltas = 0;
};

class Collector {
 public:
  RequestCallbacks callbacks() {
    RequestCallbacks cb;
    cb.on_delta = [this](const TokenDelta& d) {
      std::lock_guard<std::mutex> lock(mu_);
      Outcome& o = outcomes_[d.id];
      o.text += d.text;
      o.tokens.insert(o.tokens.end(), d.token_ids.begin(), d.token_ids.end());
      o.n_deltas += 1;
      ++n_deltas_;
      cv_.notify_all();
    };
    cb.on_error = [this](RequestId id, const Error& e) {
      std::lock_guard<std::mutex> lock(mu_);
      outcomes_[id].error = e.message;
    };
    cb.on_finish = [this](RequestId id, FinishReason r, const RequestStats& s) {
      std::lock_guard<std::mutex> lock(mu_);
      Outcome& o = outcomes_[id];
      EXPECT_FALSE(o.reason.has_value()) << "on_finish twice for request " << id;
      o.reason = r;
      o.stats = s;
      ++n_finished_;
      cv_.notify_all();
    };
    return cb;
  }

  bool wait_finished(int n, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return n_finished_ >= n; });
  }
  // Waits until request `id` has received at least `n` tokens.
  bool wait_tokens(RequestId id, size_t n, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      auto it = outcomes_.find(id);
      return it != outcomes_.end() && (it->second.tokens.size() >= n || it->second.reason);
    });
  }
  bool wait_done(RequestId id, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      auto it = outcomes_.find(id);
      return it != outcomes_.end() && it->second.reason.has_value();
    });
  }
  Outcome get(RequestId id) {
    std::lock_guard<std::mutex> lock(mu_);
    return outcomes_[id];
  }
  int n_finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return n_finished_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<RequestId, Outcome> outcomes_;
  int n_finished_ = 0;
  int64_t n_deltas_ = 0;
};

struct FakeEngineSetup {
  FakeBackendOptions backend;
  FakeTextCodecOptions codec;
  int32_t context_tokens = 4096;
  int32_t prefill_chunk_tokens = 256;
  StepObserver on_step;
};

inline std::unique_ptr<Engine> make_fake_engine(FakeEngineSetup setup) {
  EngineOptions o;
  const FakeBackendOptions b = setup.backend;
  const FakeTextCodecOptions c = setup.codec;
  o.make_backend = [b](const LoadOptions&) -> Result<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<FakeBackend>(b));
  };
  o.make_codec = [c](const LoadOptions&) -> Result<std::unique_ptr<TextCodec>> {
    return std::unique_ptr<TextCodec>(std::make_unique<FakeTextCodec>(c));
  };
  o.prefill_chunk_tokens = setup.prefill_chunk_tokens;
  o.on_step = setup.on_step;
  auto engine = std::make_unique<Engine>(std::move(o));
  LoadOptions load;
  load.model_path = "fake";
  load.context_tokens = setup.context_tokens;
  const Status st = engine->load_model(load);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.message());
  return engine;
}

// Holds the backend's call number `call_index` (0: the first) on the engine thread until the
// test releases it, to order events without timing assumptions: requests submitted before the
// release of call 0 are all queued when the engine plans its next step, however slowly the
// test's own thread runs; a test reads state or cancels while a later call is held. Arm gates
// before making the engine; several gates on one backend each hold their own call.
class CallGate {
 public:
  static std::shared_ptr<CallGate> arm(FakeBackendOptions& backend, uint64_t call_index = 0) {
    auto gate = std::make_shared<CallGate>();
    backend.on_call = [gate, call_index, previous = std::move(backend.on_call)](const FakeCall& call) {
      if (previous) previous(call);
      if (call.index != call_index) return;
      gate->reached_.set_value();
      gate->released_.wait();
    };
    return gate;
  }
  // Returns once the call has started and is held.
  void wait_reached() { reached_future_.wait(); }
  void release() { release_.set_value(); }

 private:
  std::promise<void> reached_, release_;
  std::shared_future<void> reached_future_ = reached_.get_future().share();
  std::shared_future<void> released_ = release_.get_future().share();
};

// Distinct deterministic prompt for sequence `seq`.
inline std::vector<int32_t> make_prompt(int seq, int n_tokens, int32_t n_vocab = 256) {
  std::vector<int32_t> p(static_cast<size_t>(n_tokens));
  for (int i = 0; i < n_tokens; ++i) {
    p[static_cast<size_t>(i)] = 1 + (seq * 131 + i * 17 + (i * i) % 7) % (n_vocab - 1);
  }
  return p;
}

inline Request make_request(int seq, int n_prompt, int max_tokens) {
  Request r;
  r.prompt_tokens = make_prompt(seq, n_prompt);
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

// A setup whose fake backend records every call in `log`.
inline FakeEngineSetup logged_setup(std::shared_ptr<FakeCallLog>& log) {
  FakeEngineSetup s;
  log = std::make_shared<FakeCallLog>();
  s.backend.log = log;
  return s;
}

// Runs one request alone on a fresh engine and returns what it produced.
inline Outcome run_solo(const FakeEngineSetup& setup, const Request& request) {
  FakeEngineSetup s = setup;
  s.backend.log = nullptr;
  s.backend.fail_if = nullptr;
  s.backend.on_call = nullptr;
  s.backend.decode_delay = {};
  s.backend.prefill_delay_per_token = {};
  s.on_step = nullptr;
  auto engine = make_fake_engine(s);
  Collector c;
  const RequestId id = engine->submit(request, c.callbacks());
  EXPECT_TRUE(c.wait_finished(1));
  return c.get(id);
}

}  // namespace chorus::test
