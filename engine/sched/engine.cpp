#include "engine/sched/engine.h"

#include <exception>
#include <future>
#include <variant>

#include "engine/sched/engine_core.h"

namespace chorus {

struct SubmitCommand {
  RequestId id = 0;
  Request request;
  RequestCallbacks callbacks;
  int64_t t_submit_us = 0;
};
struct CancelCommand {
  RequestId id = 0;
};
struct LoadCommand {
  LoadOptions options;
  std::promise<Status>* done = nullptr;
};
struct Engine::Command {
  std::variant<SubmitCommand, CancelCommand, LoadCommand> what;
};

Engine::Engine(EngineOptions options) : options_(std::move(options)) {
  thread_ = std::thread([this] { thread_main(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status Engine::load_model(const LoadOptions& options) {
  if (std::this_thread::get_id() == thread_.get_id()) {
    return make_error("load_model was called from an engine callback; call it from another thread");
  }
  std::promise<Status> done;
  auto result = done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return make_error("the engine is shutting down");
    inbox_.push_back(Command{LoadCommand{options, &done}});
  }
  wake_.notify_one();
  return result.get();
}

RequestId Engine::submit(Request request, RequestCallbacks callbacks) {
  const int64_t t_submit = monotonic_us();
  RequestId id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
    idle_ = false;
    inbox_.push_back(
        Command{SubmitCommand{id, std::move(request), std::move(callbacks), t_submit}});
  }
  wake_.notify_one();
  return id;
}

void Engine::cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(Command{CancelCommand{id}});
  }
  wake_.notify_one();
}

StatsSnapshot Engine::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  StatsSnapshot s = published_;
  // Rates describe the last few seconds; once the engine has been idle that long they are
  // zero, although no step came to say so.
  if (monotonic_us() - published_last_step_end_us_ > StepStats::kWindowUs) {
    s.aggregate_tok_per_s = 0.0;
    s.prefill_tok_per_s = 0.0;
  }
  return s;
}

void Engine::wait_idle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return idle_ && inbox_.empty(); });
}

void Engine::thread_main() {
  std::vector<Command> commands;
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const bool work = core_ && core_->has_work();
      if (!work && inbox_.empty()) {
        idle_ = true;
        idle_cv_.notify_all();
      }
      wake_.wait(lock, [&] { return stop_ || !inbox_.empty() || work; });
      commands.swap(inbox_);
      stopping = stop_;
    }
    if (stopping) {
      shut_down(commands);
      return;
    }
    run_commands(commands);
    commands.clear();
    if (core_ && core_->has_work()) {
      const StepRecord rec = core_->step();
      if (options_.on_step) options_.on_step(rec, core_->last_plan());
      publish_stats();
    }
  }
}

void Engine::run_commands(std::vector<Command>& commands) {
  bool changed = false;
  for (Command& c : commands) {
    if (auto* s = std::get_if<SubmitCommand>(&c.what)) {
      if (core_) {
        core_->submit(s->id, std::move(s->request), std::move(s->callbacks), s->t_submit_us);
      } else {
        const Error e = make_error("no model is loaded");
        if (s->callbacks.on_error) s->callbacks.on_error(s->id, e);
        if (s->callbacks.on_finish) s->callbacks.on_finish(s->id, FinishReason::Error, {});
      }
    } else if (auto* k = std::get_if<CancelCommand>(&c.what)) {
      if (core_) core_->cancel(k->id);
    } else if (auto* l = std::get_if<LoadCommand>(&c.what)) {
      // Published before the caller wakes, so its first stats() shows the new model.
      Status st = make_error("model load failed");
      try {
        st = do_load(l->options);
      } catch (const std::exception& e) {
        st = make_error(l->options.model_path + ": " + e.what());
      }
      publish_stats();
      l->done->set_value(std::move(st));
    }
    changed = true;
  }
  if (changed) publish_stats();
}

// The old model goes first (its requests finish Cancelled and its memory is released)
// so that two models never have to fit at once.
Status Engine::do_load(const LoadOptions& options) {
  if (core_) core_->cancel_all();
  core_.reset();
  if (!options_.make_backend || !options_.make_codec) {
    return make_error("the engine was built without a model factory");
  }
  auto backend = options_.make_backend(options);
  if (!backend.ok()) return backend.error();
  auto codec = options_.make_codec(options);
  if (!codec.ok()) return codec.error();
  EngineCoreConfig config;
  config.context_tokens = options.context_tokens;
  config.prefill_chunk_tokens = options_.prefill_chunk_tokens;
  config.max_prefill_seqs = options_.max_prefill_seqs;
  config.model_name = (*backend)->config().model_name;
  core_ = std::make_unique<EngineCore>(std::move(backend).value(), std::move(codec).value(),
                                       config);
  return Ok{};
}

void Engine::publish_stats() {
  const int64_t now = monotonic_us();
  if (core_) {
    core_->fill_stats(scratch_stats_, now);
  } else {
    scratch_stats_ = StatsSnapshot{};
  }
  std::lock_guard<std::mutex> lock(stats_mu_);
  published_ = scratch_stats_;
  published_last_step_end_us_ = core_ ? core_->last_step_end_us() : 0;
}

void Engine::shut_down(std::vector<Command>& commands) {
  for (Command& c : commands) {
    if (auto* s = std::get_if<SubmitCommand>(&c.what)) {
      if (s->callbacks.on_finish) s->callbacks.on_finish(s->id, FinishReason::Cancelled, {});
    } else if (auto* l = std::get_if<LoadCommand>(&c.what)) {
      l->done->set_value(make_error("the engine is shutting down"));
    }
  }
  if (core_) core_->cancel_all();
  core_.reset();
}

}  // namespace chorus
