#include "engine/sched/engine_core.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <exception>

namespace chorus {
namespace {

SchedulerConfig scheduler_config(const Backend& backend, const EngineCoreConfig& config) {
  SchedulerConfig s;
  s.max_batch = std::max(1, backend.max_batch());
  s.prefill_chunk_tokens =
      std::max(1, std::min(config.prefill_chunk_tokens, backend.max_prefill_tokens()));
  // A backend that takes several sequences' chunks in one call gets as many as fit in its
  // largest call: the weights are read once for all of them.
  s.max_prefill_seqs = std::max(1, std::min(backend.max_prefill_seqs(), s.max_batch));
  if (config.max_prefill_seqs > 0) s.max_prefill_seqs = std::min(s.max_prefill_seqs, config.max_prefill_seqs);
  // (The scheduler raises a step budget below one chunk to one chunk.)
  if (s.max_prefill_seqs > 1) s.prefill_step_tokens = backend.max_prefill_tokens();
  s.context_tokens = config.context_tokens;
  const int32_t n_ctx_train = backend.config().n_ctx_train;
  if (n_ctx_train > 0) s.context_tokens = std::min(s.context_tokens, n_ctx_train);
  return s;
}

// Backends report failures as values; an exception escaping one still must not take the
// engine thread down.
template <typename F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return make_error(std::string("backend: ") + e.what());
  } catch (...) {
    return make_error("backend: unknown exception");
  }
}

// Callbacks belong to the caller; one that throws must not stop the other requests.
template <typename F, typename... A>
void invoke(const F& f, A&&... args) {
  if (!f) return;
  try {
    f(std::forward<A>(args)...);
  } catch (...) {
  }
}

}  // namespace

int64_t monotonic_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

EngineCore::EngineCore(std::unique_ptr<Backend> backend, std::unique_ptr<TextCodec> codec,
                       const EngineCoreConfig& config)
    : backend_(std::move(backend)),
      codec_(std::move(codec)),
      config_(config),
      scheduler_(scheduler_config(*backend_, config), backend_->kv_layout()),
      backend_name_(backend_->name()),
      device_name_(backend_->device_name()) {
  touched_.reserve(64);
  requests_.reserve(64);
}

EngineCore::~EngineCore() { cancel_all(); }

RequestState* EngineCore::find(int64_t id) {
  auto it = requests_.find(static_cast<RequestId>(id));
  return it == requests_.end() ? nullptr : it->second.get();
}

Result<std::vector<int32_t>> EngineCore::prompt_of(Request& request) {
  if (!request.messages.empty()) {
    try {
      return codec_->encode_messages(request.messages);
    } catch (const std::exception& e) {
      return make_error(std::string("chat template: ") + e.what());
    }
  }
  if (request.prompt_tokens.empty()) {
    return make_error("request has neither messages nor prompt tokens");
  }
  const int32_t n_vocab = backend_->config().n_vocab;
  for (int32_t t : request.prompt_tokens) {
    if (t < 0 || t >= n_vocab) {
      return make_error("prompt token " + std::to_string(t) + " is outside the vocabulary (" +
                        std::to_string(n_vocab) + " tokens)");
    }
  }
  return std::move(request.prompt_tokens);
}

void EngineCore::submit(RequestId id, Request request, RequestCallbacks callbacks,
                        int64_t t_submit_us) {
  auto r = std::make_unique<RequestState>();
  r->id = id;
  r->callbacks = std::move(callbacks);
  r->t_submit_us = t_submit_us;
  r->delta.id = id;
  auto prompt = prompt_of(request);
  if (!prompt.ok()) {
    r->error = prompt.error();
    r->finish = FinishReason::Error;
    finish_now(*r);
    return;
  }
  r->stats.n_prompt_tokens = static_cast<int32_t>(prompt->size());
  if (r->stats.n_prompt_tokens >= scheduler_.context_limit()) {
    r->finish = FinishReason::ContextFull;
    finish_now(*r);
    return;
  }
  r->max_tokens = request.max_tokens;
  r->ignore_eos = request.ignore_eos;
  r->decoder = codec_->new_decoder();
  r->stop = StopMatcher(std::move(request.stop_strings));
  scheduler_.add({static_cast<int64_t>(id), std::move(prompt).value(), request.priority,
                  request.sampling});
  requests_.emplace(id, std::move(r));
}

void EngineCore::cancel(RequestId id) {
  RequestState* r = find(static_cast<int64_t>(id));
  if (!r) return;
  scheduler_.remove(static_cast<int64_t>(id));
  r->finish = FinishReason::Cancelled;
  finish_now(*r);
}

void EngineCore::cancel_all() {
  std::vector<RequestId> ids;
  ids.reserve(requests_.size());
  for (const auto& [id, r] : requests_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (RequestId id : ids) cancel(id);
}

// Phases are contiguous: each starts where the previous one ended, so they add up to the
// step exactly and nothing the engine thread does inside a step goes unaccounted.
StepRecord EngineCore::step() {
  StepRecord rec;
  rec.index = stats_.n_steps();
  rec.t_start_us = monotonic_us();
  const StepPlan& plan = scheduler_.schedule();
  note_plan_events();
  if (!plan.decode.empty()) scheduler_.fill_decode_batch(batch_);
  rec.t_schedule_us = monotonic_us() - rec.t_start_us;

  run_backend(rec);
  const int64_t t_backend_end = rec.t_start_us + rec.sum_phases_us();

  apply_outputs(t_backend_end);
  const int64_t t_detok_end = monotonic_us();
  rec.t_detokenize_us = t_detok_end - t_backend_end;

  deliver();
  rec.t_deliver_us = monotonic_us() - t_detok_end;
  rec.t_step_us = rec.sum_phases_us();
  last_n_decode_ = rec.n_decode;
  stats_.add(rec);
  return rec;
}

void EngineCore::note_plan_events() {
  const StepPlan& plan = scheduler_.plan();
  for (int64_t id : plan.preempted) {
    if (RequestState* r = find(id)) r->stats.n_preemptions += 1;
  }
  for (const PlannedFinish& f : plan.finished) {
    if (RequestState* r = find(f.seq_id)) end_request(*r, f.reason);
  }
}

// Runs the decode batch, then the prompt chunks (one backend call for all of them). Of the
// decode call's wall time, the backend's own upload/sample/download figures are kept and the
// rest (its forward pass, any overhead) counts as forward; the prompt call's wall time is the
// prefill phase.
void EngineCore::run_backend(StepRecord& rec) {
  const StepPlan& plan = scheduler_.plan();
  const int64_t t_begin = rec.t_start_us + rec.t_schedule_us;
  BackendTimes reported;
  if (!plan.decode.empty()) {
    decode_result_ = guarded([&] { return backend_->decode(batch_); });
    if (decode_result_.ok()) {
      reported = decode_result_->times;
      rec.n_decode = static_cast<int32_t>(plan.decode.size());
      rec.n_generated = rec.n_decode;
    }
  }
  const int64_t t_decode_end = monotonic_us();
  if (!plan.prefill.empty()) {
    chunks_.clear();
    for (size_t i = 0; i < plan.prefill.size(); ++i) {
      chunks_.push_back(scheduler_.prefill_chunk(i));
      RequestState* r = find(plan.prefill[i].seq_id);
      if (r && r->t_scheduled_us < 0) r->t_scheduled_us = t_decode_end;
    }
    prefill_result_ = guarded([&] { return backend_->prefill_batch(chunks_); });
    const int64_t t_prefill_end = monotonic_us();
    // A shared call's time is split between its requests by their tokens: what each
    // request's prompt cost the device.
    const int64_t n_total = plan.n_prefill_tokens();
    for (const PlannedPrefill& p : plan.prefill) {
      if (RequestState* r = find(p.seq_id)) {
        r->t_prefill_compute_us += (t_prefill_end - t_decode_end) * p.n_tokens / std::max<int64_t>(1, n_total);
      }
    }
    if (prefill_result_.ok() && prefill_result_->size() == plan.prefill.size()) {
      rec.n_prefill_tokens = static_cast<int32_t>(n_total);
      rec.n_prefill_seqs = static_cast<int32_t>(plan.prefill.size());
      for (const PlannedPrefill& p : plan.prefill) rec.n_generated += p.samples_first_token ? 1 : 0;
    }
    rec.t_prefill_us = t_prefill_end - t_decode_end;
  }
  const int64_t total = t_decode_end - t_begin;
  int64_t up = std::max<int64_t>(0, reported.t_upload_us);
  int64_t sample = std::max<int64_t>(0, reported.t_sample_us);
  int64_t down = std::max<int64_t>(0, reported.t_download_us);
  const int64_t claimed = up + sample + down;
  if (claimed > total) {  // a backend clock disagreeing with ours: scale to fit
    up = up * total / claimed;
    sample = sample * total / claimed;
    down = down * total / claimed;
  }
  rec.t_upload_us = up;
  rec.t_sample_us = sample;
  rec.t_download_us = down;
  rec.t_forward_us = total - up - sample - down;
}

void EngineCore::apply_outputs(int64_t now_us) {
  const StepPlan& plan = scheduler_.plan();
  if (!plan.decode.empty()) {
    if (decode_result_.ok() && decode_result_->tokens.size() == plan.decode.size()) {
      const std::vector<int32_t>& tokens = decode_result_->tokens;
      scheduler_.apply_decode(tokens);
      for (size_t i = 0; i < plan.decode.size(); ++i) {
        if (RequestState* r = find(plan.decode[i].seq_id)) on_token(*r, tokens[i], now_us);
      }
    } else {
      const Error e = decode_result_.ok()
                          ? make_error("backend returned " +
                                       std::to_string(decode_result_->tokens.size()) +
                                       " tokens for a batch of " +
                                       std::to_string(plan.decode.size()))
                          : decode_result_.error();
      for (const PlannedDecode& d : plan.decode) fail_request(d.seq_id, e);
    }
  }
  if (plan.prefill.empty()) return;
  if (!prefill_result_.ok() || prefill_result_->size() != plan.prefill.size()) {
    const Error e = prefill_result_.ok()
                        ? make_error("backend returned " + std::to_string(prefill_result_->size()) +
                                     " prefill results for " + std::to_string(plan.prefill.size()) +
                                     " chunks")
                        : prefill_result_.error();
    for (const PlannedPrefill& p : plan.prefill) fail_request(p.seq_id, e);
    return;
  }
  prefill_tokens_.clear();
  for (const PrefillResult& r : *prefill_result_) prefill_tokens_.push_back(r.sampled_token);
  scheduler_.apply_prefill(prefill_tokens_);
  for (size_t i = 0; i < plan.prefill.size(); ++i) {
    const PlannedPrefill& p = plan.prefill[i];
    RequestState* r = find(p.seq_id);
    if (!r || !p.samples_first_token) continue;
    if (r->t_prefill_compute_us > 0) {
      r->stats.prefill_tok_per_s =
          r->stats.n_prompt_tokens * 1e6 / static_cast<double>(r->t_prefill_compute_us);
    }
    on_token(*r, prefill_tokens_[i], now_us);
  }
}

void EngineCore::on_token(RequestState& r, int32_t token, int64_t now_us) {
  if (r.finish) return;
  if (token < 0 || token >= backend_->config().n_vocab) {
    fail_request(static_cast<int64_t>(r.id),
                 make_error("backend sampled token " + std::to_string(token) +
                            ", outside the vocabulary"));
    return;
  }
  const Sequence* s = scheduler_.find(static_cast<int64_t>(r.id));
  assert(s && "a live request always has its sequence");
  if (!s) return;
  if (r.t_first_token_us < 0) r.t_first_token_us = now_us;
  r.t_last_token_us = now_us;
  r.stats.n_generated_tokens = s->n_generated();
  touch(r);
  if (!r.ignore_eos && codec_->is_end_of_generation(token)) {
    end_request(r, FinishReason::EndOfGeneration);
    return;
  }
  r.delta.token_ids.push_back(token);
  r.scratch_text.clear();
  r.decoder->push(token, r.scratch_text);
  if (r.stop.push(r.scratch_text, r.delta.text) == StopMatcher::State::Stopped) {
    end_request(r, FinishReason::StopString);
  } else if (r.max_tokens > 0 && s->n_generated() >= r.max_tokens) {
    end_request(r, FinishReason::MaxTokens);
  } else if (s->n_tokens() >= scheduler_.context_limit()) {
    end_request(r, FinishReason::ContextFull);
  }
}

// Ends a request within a step: frees its blocks now, reports in the deliver phase. Text
// held back for a possible stop string is released unless a stop string ended it.
void EngineCore::end_request(RequestState& r, FinishReason reason) {
  r.finish = reason;
  if (reason != FinishReason::StopString && r.decoder) {
    r.scratch_text.clear();
    r.decoder->flush(r.scratch_text);
    if (r.stop.push(r.scratch_text, r.delta.text) == StopMatcher::State::Stopped) {
      r.finish = FinishReason::StopString;
    } else {
      r.stop.flush(r.delta.text);
    }
  }
  scheduler_.remove(static_cast<int64_t>(r.id));
  touch(r);
}

void EngineCore::fail_request(int64_t id, const Error& error) {
  RequestState* r = find(id);
  if (!r || r->finish) return;
  r->error = error;
  r->finish = FinishReason::Error;
  scheduler_.remove(id);
  touch(*r);
}

void EngineCore::touch(RequestState& r) {
  if (r.touched) return;
  r.touched = true;
  touched_.push_back(&r);
}

void EngineCore::deliver() {
  for (RequestState* r : touched_) {
    r->touched = false;
    if (!r->delta.text.empty() || !r->delta.token_ids.empty()) {
      invoke(r->callbacks.on_delta, r->delta);
      r->delta.text.clear();
      r->delta.token_ids.clear();
    }
    if (r->finish) finish_now(*r);  // destroys *r
  }
  touched_.clear();
}

void EngineCore::refresh_stats(RequestState& r) const {
  RequestStats& s = r.stats;
  if (r.t_scheduled_us >= 0) s.t_queued_us = r.t_scheduled_us - r.t_submit_us;
  if (r.t_first_token_us >= 0) s.t_first_token_us = r.t_first_token_us - r.t_submit_us;
  const int64_t decode_us = r.t_last_token_us - r.t_first_token_us;
  if (s.n_generated_tokens >= 2 && decode_us > 0) {
    s.decode_tok_per_s = (s.n_generated_tokens - 1) * 1e6 / static_cast<double>(decode_us);
  }
}

void EngineCore::finish_now(RequestState& r) {
  refresh_stats(r);
  const RequestId id = r.id;
  if (r.error) invoke(r.callbacks.on_error, id, *r.error);
  invoke(r.callbacks.on_finish, id, r.finish.value_or(FinishReason::Error), r.stats);
  requests_.erase(id);  // no-op for a request refused before it was admitted
}

void EngineCore::fill_stats(StatsSnapshot& out, int64_t now_us) {
  out.backend_name = backend_name_;
  out.device_name = device_name_;
  out.model_name = config_.model_name;
  out.model_loaded = true;
  out.current_batch = last_n_decode_;
  out.max_batch_seen = stats_.max_batch_seen();
  out.n_running = scheduler_.n_running();
  out.n_waiting = scheduler_.n_waiting();
  out.n_steps = stats_.n_steps();
  out.n_tokens_generated = stats_.n_tokens_generated();
  out.aggregate_tok_per_s = stats_.decode_tok_per_s(now_us);
  out.prefill_tok_per_s = stats_.prefill_tok_per_s(now_us);
  out.last_step = stats_.last();
  out.mean_step = stats_.mean();
  out.kv_blocks_used = scheduler_.allocator().n_blocks_used();
  out.kv_blocks_total = scheduler_.allocator().n_blocks_total();
  // Memory queries may cost a driver call; twice a second is plenty for a panel.
  if (t_memory_polled_us_ < 0 || now_us - t_memory_polled_us_ > 500000) {
    memory_ = backend_->memory();
    t_memory_polled_us_ = now_us;
  }
  out.weights_bytes = memory_.weights_bytes;
  out.kv_cache_bytes = memory_.kv_cache_bytes;
  out.device_total_bytes = memory_.device_total_bytes;
  out.device_free_bytes = memory_.device_free_bytes;
  const BackendCounters c = backend_->counters();
  out.graph_captures = c.graph_captures;
  out.graph_replays = c.graph_replays;
  out.requests.clear();
  for (auto& [id, r] : requests_) {
    refresh_stats(*r);
    const Sequence* s = scheduler_.find(static_cast<int64_t>(id));
    const bool running = s && s->phase != SeqPhase::Waiting;
    out.requests.push_back({id, r->stats, running});
  }
}

}  // namespace chorus
