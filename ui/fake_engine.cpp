#include "ui/fake_engine.h"

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <sstream>

namespace chorus::ui {
namespace {

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Splits text into word-sized "tokens" that keep their leading whitespace, so that joining
// them reproduces the text exactly.
std::vector<std::string> split_tokens(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && !cur.empty() && cur.back() != ' ' && cur.back() != '\n') {
      out.push_back(cur);
      cur.clear();
    }
    cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

FakeEngine::FakeEngine(FakeEngineOptions options) : options_(options) {
  worker_ = std::thread([this] { run(); });
}

FakeEngine::~FakeEngine() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

Status FakeEngine::load_model(const LoadOptions& options) {
  if (options_.load_delay_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.load_delay_ms));
  std::error_code ec;
  if (!options.model_path.empty() && !std::filesystem::is_regular_file(options.model_path, ec))
    return make_error(options.model_path + ": no such file");
  std::lock_guard lock(mu_);
  for (Active& a : active_) a.cancelled = true;  // as the real engine: old requests end
  last_load_ = options;
  loaded_ = true;
  model_name_ = options.model_path.empty()
                    ? "fake model"
                    : std::filesystem::path(options.model_path).filename().string();
  return Ok{};
}

std::vector<std::string> FakeEngine::scripted_reply(const Request& request,
                                                    int32_t filler_sentences) {
  std::string last_user;
  for (const ChatMessage& m : request.messages)
    if (m.role == "user") last_user = m.content;
  std::string topic = last_user.substr(0, 48);
  for (char& c : topic)
    if (c == '\n' || c == '*' || c == '`') c = ' ';
  std::ostringstream s;
  s << "## Reply\n\nYou asked about *" << topic << "*. Here is what I can say:\n\n"
    << "- first, the short answer\n- second, a detail\n- third, a caveat\n\n"
    << "```cpp\nint answer() {\n  return 42;\n}\n```\n\n";
  for (int i = 1; i <= filler_sentences; ++i)
    s << "Sentence " << i << " keeps the stream going with a few more plain words. ";
  s << "\n\nThat is all.";
  return split_tokens(s.str());
}

RequestId FakeEngine::submit(Request request, RequestCallbacks callbacks) {
  Active a;
  a.tokens = scripted_reply(request, options_.filler_sentences);
  a.max_tokens = request.max_tokens;
  for (const ChatMessage& m : request.messages)
    a.n_prompt_tokens += static_cast<int32_t>(split_tokens(m.content).size()) + 4;
  a.callbacks = std::make_shared<RequestCallbacks>(std::move(callbacks));
  a.t_submit_us = now_us();
  a.stats.n_prompt_tokens = a.n_prompt_tokens;
  std::lock_guard lock(mu_);
  a.context_full = a.n_prompt_tokens >= last_load_.context_tokens;
  a.id = next_id_++;
  submitted_.push_back(std::move(request));
  active_.push_back(std::move(a));
  cv_.notify_all();
  return active_.back().id;
}

void FakeEngine::cancel(RequestId id) {
  std::lock_guard lock(mu_);
  for (Active& a : active_)
    if (a.id == id) a.cancelled = true;
}

void FakeEngine::run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (active_.empty()) {
      cv_.wait(lock, [this] { return stop_ || !active_.empty(); });
      continue;
    }
    cv_.wait_for(lock, std::chrono::microseconds(options_.step_interval_us),
                 [this] { return stop_; });
    if (stop_) break;
    std::vector<Emission> out;
    step_locked(out);
    std::erase_if(active_, [](const Active& a) {
      return a.cancelled || a.context_full || a.next >= a.tokens.size() ||
             static_cast<int32_t>(a.next) >= a.max_tokens;
    });
    lock.unlock();
    deliver(out);
    lock.lock();
  }
}

void FakeEngine::step_locked(std::vector<Emission>& out) {
  const int64_t t = now_us();
  int32_t m = 0, produced = 0;
  for (Active& a : active_) {
    Emission e;
    e.callbacks = a.callbacks;
    e.delta.id = a.id;
    if (!a.cancelled && !a.context_full) {
      ++m;
      for (int k = 0; k < options_.tokens_per_step && a.next < a.tokens.size() &&
                      static_cast<int32_t>(a.next) < a.max_tokens;
           ++k) {
        e.delta.text += a.tokens[a.next];
        e.delta.token_ids.push_back(static_cast<int32_t>(a.next));
        ++a.next;
        ++produced;
      }
      if (a.stats.t_first_token_us == 0) a.stats.t_first_token_us = t - a.t_submit_us;
      a.stats.n_generated_tokens = static_cast<int32_t>(a.next);
      const double secs = std::max(1e-6, (t - a.t_submit_us - a.stats.t_first_token_us) / 1e6);
      a.stats.decode_tok_per_s = a.next > 1 ? (a.next - 1) / secs : 0.0;
      a.stats.prefill_tok_per_s = a.n_prompt_tokens / std::max(1e-6, a.stats.t_first_token_us / 1e6);
    }
    const bool eos = a.next >= a.tokens.size();
    const bool max = static_cast<int32_t>(a.next) >= a.max_tokens;
    if (a.cancelled || a.context_full || eos || max) {
      e.finished = true;
      e.reason = a.cancelled      ? FinishReason::Cancelled
                 : a.context_full ? FinishReason::ContextFull
                 : eos            ? FinishReason::EndOfGeneration
                                  : FinishReason::MaxTokens;
    }
    e.stats = a.stats;
    out.push_back(std::move(e));
  }
  current_batch_ = m;
  max_batch_ = std::max(max_batch_, m);
  ++n_steps_;
  n_tokens_ += produced;
  recent_.emplace_back(t, produced);
  while (!recent_.empty() && recent_.front().first < t - 2'000'000) recent_.pop_front();
}

void FakeEngine::deliver(const std::vector<Emission>& out) const {
  for (const Emission& e : out) {
    if (!e.delta.text.empty() && e.callbacks->on_delta) {
      if (options_.trace_tokens) {
        std::printf("fake-token %llu %d\n", static_cast<unsigned long long>(e.delta.id),
                    e.delta.token_ids.back() + 1);
        std::fflush(stdout);
      }
      e.callbacks->on_delta(e.delta);
    }
    if (e.finished && e.callbacks->on_finish) e.callbacks->on_finish(e.delta.id, e.reason, e.stats);
  }
}

StatsSnapshot FakeEngine::stats() const {
  std::lock_guard lock(mu_);
  StatsSnapshot s;
  s.backend_name = "fake";
  s.device_name = "deterministic fake device";
  s.model_name = model_name_;
  s.model_loaded = loaded_;
  s.current_batch = active_.empty() ? 0 : current_batch_;
  s.max_batch_seen = max_batch_;
  s.n_running = static_cast<int32_t>(active_.size());
  s.n_steps = n_steps_;
  s.n_tokens_generated = n_tokens_;
  int64_t toks = 0;
  for (const auto& [t, n] : recent_) toks += n;
  if (recent_.size() > 1) {
    const double span_s = std::max(0.25, (now_us() - recent_.front().first) / 1e6);
    s.aggregate_tok_per_s = toks / span_s;
  }
  const double m = std::max(1, current_batch_);
  // The fake computes no prompts, so its prefill phase stays 0.
  s.mean_step = {30, 12, 900 + 25 * m, 40 + 3 * m, 8, 0, 5 * m, 4 * m, 0};
  s.mean_step.step_us = s.mean_step.schedule_us + s.mean_step.upload_us + s.mean_step.forward_us +
                        s.mean_step.sample_us + s.mean_step.download_us + s.mean_step.prefill_us +
                        s.mean_step.detokenize_us + s.mean_step.deliver_us;
  s.last_step = s.mean_step;
  s.kv_blocks_total = 1024;
  s.weights_bytes = 80ll << 20;
  s.kv_cache_bytes = 256ll << 20;
  s.device_total_bytes = 8ll << 30;
  s.device_free_bytes = s.device_total_bytes - s.weights_bytes - s.kv_cache_bytes;
  s.graph_captures = std::min<int64_t>(max_batch_, 32);
  s.graph_replays = std::max<int64_t>(0, n_steps_ - s.graph_captures);
  for (const Active& a : active_) {
    s.kv_blocks_used += (a.n_prompt_tokens + static_cast<int64_t>(a.next) + 15) / 16;
    s.prefill_tok_per_s = std::max(s.prefill_tok_per_s, a.stats.prefill_tok_per_s);
    s.requests.push_back({a.id, a.stats, !a.cancelled});
  }
  return s;
}

std::vector<Request> FakeEngine::submitted_requests() const {
  std::lock_guard lock(mu_);
  return submitted_;
}

LoadOptions FakeEngine::last_load_options() const {
  std::lock_guard lock(mu_);
  return last_load_;
}

void FakeEngine::set_step_interval_us(int64_t us) {
  std::lock_guard lock(mu_);
  options_.step_interval_us = us;
}

}  // namespace chorus::ui
