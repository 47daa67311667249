// chorus-bench run: N independent requests at once through the real Engine API, for each N
// of --parallel; one row of figures per N, then every sequence again alone, to check that
// batching changed no token (batch invariance).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "app/bench/bench_commands.h"
#include "engine/backend/fake_backend.h"
#include "engine/gguf/gguf_reader.h"
#include "engine/model/model_config.h"
#include "engine/sched/decode_rates.h"
#include "engine/sched/default_engine.h"
#include "engine/sched/engine.h"
#include "engine/sched/engine_stats.h"
#include "engine/sched/fake_text_codec.h"

namespace {

using namespace chorus;

struct RunArgs {
  std::string model;
  std::vector<int> parallel{1, 2, 4, 8, 16, 32};
  int prompt_tokens = 128;
  int gen_tokens = 128;
  std::string backend = "cpu";
  int threads = 0;
  int fake_delay_us = 0;  // --backend fake: simulated decode time per step
  int prefill_seqs = 0;   // most sequences per prefill call (0: what the backend takes)
};

int fail(const std::string& message) {
  std::fprintf(stderr, "chorus-bench run: %s\n", message.c_str());
  return 1;
}

Result<int> parse_count(const std::string& name, const char* text, int lo, int hi) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (!end || *end != '\0' || end == text || v < lo || v > hi) {
    return make_error(name + ": expected an integer in " + std::to_string(lo) + ".." +
                      std::to_string(hi) + ", got '" + text + "'");
  }
  return static_cast<int>(v);
}

Result<std::vector<int>> parse_list(const char* text) {
  std::vector<int> out;
  std::string item;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      auto n = parse_count("--parallel", item.c_str(), 1, 1024);
      if (!n.ok()) return n.error();
      out.push_back(*n);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return out;
}

Result<RunArgs> parse_args(int argc, char** argv) {
  RunArgs a;
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) return make_error(k + ": missing value (or unknown option)");
    const char* v = argv[++i];
    if (k == "--model") {
      a.model = v;
    } else if (k == "--backend") {
      a.backend = v;
    } else if (k == "--parallel") {
      auto l = parse_list(v);
      if (!l.ok()) return l.error();
      a.parallel = *l;
    } else {
      int* dst = k == "--prompt-tokens" ? &a.prompt_tokens
                 : k == "--gen-tokens"  ? &a.gen_tokens
                 : k == "--threads"     ? &a.threads
                 : k == "--fake-delay-us" ? &a.fake_delay_us
                 : k == "--prefill-seqs"  ? &a.prefill_seqs
                                          : nullptr;
      if (!dst) return make_error("unknown option " + k);
      const bool zero_ok = dst == &a.threads || dst == &a.fake_delay_us || dst == &a.prefill_seqs;
      auto n = parse_count(k, v, zero_ok ? 0 : 1, 1 << 20);
      if (!n.ok()) return n.error();
      *dst = *n;
    }
  }
  if (a.model.empty() && a.backend != "fake") return make_error("--model is required");
  return a;
}

// Collects every step the engine runs; the bench reads it between runs.
class StepLog {
 public:
  void add(const StepRecord& r) {
    std::lock_guard<std::mutex> lock(mu_);
    steps_.push_back(r);
  }
  std::vector<StepRecord> take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(steps_, {});
  }

 private:
  std::mutex mu_;
  std::vector<StepRecord> steps_;
};

struct OpenedEngine {
  std::unique_ptr<Engine> engine;
  int32_t n_vocab = 0;
};

Result<OpenedEngine> open_engine(const RunArgs& a, StepLog& log) {
  EngineOptions o;
  LoadOptions load;
  load.model_path = a.model;
  load.backend = a.backend;
  load.n_threads = a.threads;
  load.context_tokens = a.prompt_tokens + a.gen_tokens + 16;
  OpenedEngine e;
  if (a.backend == "fake") {
    FakeBackendOptions f;
    f.n_vocab = 32000;
    f.n_ctx_train = load.context_tokens;
    const int max_n = *std::max_element(a.parallel.begin(), a.parallel.end());
    f.max_batch = std::max(32, max_n);
    f.kv = KvLayout{16, (max_n * load.context_tokens) / 16 + 16};
    f.decode_delay = std::chrono::microseconds(a.fake_delay_us);
    f.max_prefill_seqs = f.max_batch;  // shares prefill calls as the CUDA backend does
    o.make_backend = [f](const LoadOptions&) -> Result<std::unique_ptr<Backend>> {
      return std::unique_ptr<Backend>(std::make_unique<FakeBackend>(f));
    };
    o.make_codec = [](const LoadOptions&) -> Result<std::unique_ptr<TextCodec>> {
      return std::unique_ptr<TextCodec>(std::make_unique<FakeTextCodec>(FakeTextCodecOptions{32000, -1}));
    };
    e.n_vocab = f.n_vocab;
  } else {
    o = default_engine_options();
    auto reader = gguf::Reader::open(a.model);
    if (!reader.ok()) return reader.error();
    auto config = ModelConfig::from_gguf(*reader);
    if (!config.ok()) return config.error();
    // Checked here so that the user reads the numbers, not a sequence ending context-full
    // after 0 tokens (the engine caps the context at what the model was trained for).
    if (config->n_ctx_train > 0 && a.prompt_tokens + a.gen_tokens > config->n_ctx_train) {
      return make_error("--prompt-tokens " + std::to_string(a.prompt_tokens) + " + --gen-tokens " +
                        std::to_string(a.gen_tokens) + " exceed " + a.model + "'s context of " +
                        std::to_string(config->n_ctx_train) + " tokens");
    }
    e.n_vocab = config->n_vocab;
  }
  o.max_prefill_seqs = a.prefill_seqs;
  o.on_step = [&log](const StepRecord& r, const StepPlan&) { log.add(r); };
  e.engine = std::make_unique<Engine>(std::move(o));
  CHORUS_TRY(e.engine->load_model(load));
  return e;
}

// Distinct ids for every (sequence, position), away from the low ids (bytes, control
// tokens) and the high ones (added special tokens) of common vocabularies.
std::vector<int32_t> make_prompt(int seq, int n_tokens, int32_t n_vocab) {
  const int64_t lo = n_vocab > 4000 ? 1000 : 1;
  const int64_t range = std::min<int64_t>(n_vocab, 30000) - lo;
  const int64_t stride = 7919;  // prime, so consecutive indices map to distinct ids
  std::vector<int32_t> p(static_cast<size_t>(n_tokens));
  for (int i = 0; i < n_tokens; ++i) {
    const int64_t k = static_cast<int64_t>(seq) * n_tokens + i;
    p[static_cast<size_t>(i)] = static_cast<int32_t>(lo + (k * stride) % range);
  }
  return p;
}

struct SeqResult {
  std::vector<int32_t> tokens;
  FinishReason reason = FinishReason::Error;
  std::string error;
  RequestStats stats;
};

// Submits `seqs` at once and waits for all of them.
std::vector<SeqResult> run_batch(Engine& engine, const std::vector<int>& seqs, const RunArgs& a,
                                 int32_t n_vocab, int64_t* wall_us) {
  std::mutex mu;
  std::condition_variable cv;
  size_t n_done = 0;
  std::vector<SeqResult> out(seqs.size());
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < seqs.size(); ++i) {
    Request r;
    r.prompt_tokens = make_prompt(seqs[i], a.prompt_tokens, n_vocab);
    r.max_tokens = a.gen_tokens;
    r.ignore_eos = true;
    RequestCallbacks cb;
    SeqResult* res = &out[i];
    cb.on_delta = [res](const TokenDelta& d) {
      res->tokens.insert(res->tokens.end(), d.token_ids.begin(), d.token_ids.end());
    };
    cb.on_error = [res](RequestId, const Error& e) { res->error = e.message; };
    cb.on_finish = [&, res](RequestId, FinishReason reason, const RequestStats& s) {
      std::lock_guard<std::mutex> lock(mu);
      res->reason = reason;
      res->stats = s;
      ++n_done;
      cv.notify_all();
    };
    engine.submit(std::move(r), std::move(cb));
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return n_done == seqs.size(); });
  *wall_us = std::chrono::duration_cast<std::chrono::microseconds>(
                 std::chrono::steady_clock::now() - t0).count();
  return out;
}

struct PhaseMeans {
  StepPhaseTimes t;
  int64_t n_steps = 0;
};

// Mean phases of the steady steps: all N decoding and no prompt chunk; all decode steps
// when there are none.
PhaseMeans mean_phases(const std::vector<StepRecord>& steps, int n) {
  std::vector<StepRecord> picked;
  for (int pass = 0; pass < 2 && picked.empty(); ++pass) {
    for (const StepRecord& r : steps) {
      const bool steady = r.n_decode == n && r.n_prefill_tokens == 0;
      if (pass == 0 ? steady : r.n_decode > 0) picked.push_back(r);
    }
  }
  return {mean_phase_times(picked), static_cast<int64_t>(picked.size())};
}

void print_header() {
  std::printf("agg tok/s: decoded tokens / time of the steps that decoded; decode t/s: the same "
              "less the prompt chunks computed in those steps (generation alone, as "
              "llama-batched-bench's S_TG)\n");
  std::printf("%4s %10s %10s %10s %9s %11s | %s\n", "N", "agg tok/s", "decode t/s", "seq tok/s",
              "TTFT ms", "prefill t/s",
              "mean step us: sched upload forward sample download prefill detok deliver = step (steps) | prefill calls");
}

void print_row(int n, const std::vector<SeqResult>& res, const std::vector<StepRecord>& steps) {
  const DecodeRates rates = decode_rates(steps);
  double seq_rate = 0, ttft_us = 0, prefill_rate = 0;
  for (const SeqResult& r : res) {
    seq_rate += r.stats.decode_tok_per_s;
    ttft_us += static_cast<double>(r.stats.t_first_token_us);
    prefill_rate += r.stats.prefill_tok_per_s;
  }
  const double k = static_cast<double>(res.size());
  const PhaseMeans m = mean_phases(steps, n);
  int64_t prefill_calls = 0, prefill_seqs = 0;
  for (const StepRecord& r : steps) {
    prefill_calls += r.n_prefill_seqs > 0 ? 1 : 0;
    prefill_seqs += r.n_prefill_seqs;
  }
  std::printf("%4d %10.1f %10.1f %10.1f %9.2f %11.1f | %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f = %.0f (%lld) | %lld prefill calls, %.1f prompts each\n",
              n, rates.step_tok_per_s(), rates.decode_tok_per_s(), seq_rate / k, ttft_us / k / 1000.0, prefill_rate / k, m.t.schedule_us,
              m.t.upload_us, m.t.forward_us, m.t.sample_us, m.t.download_us, m.t.prefill_us, m.t.detokenize_us,
              m.t.deliver_us, m.t.step_us, static_cast<long long>(m.n_steps), static_cast<long long>(prefill_calls),
              prefill_calls > 0 ? static_cast<double>(prefill_seqs) / static_cast<double>(prefill_calls) : 0.0);
  std::fflush(stdout);
}

bool all_complete(const std::vector<SeqResult>& res, const RunArgs& a) {
  for (size_t i = 0; i < res.size(); ++i) {
    if (res[i].reason != FinishReason::MaxTokens ||
        static_cast<int>(res[i].tokens.size()) != a.gen_tokens) {
      std::fprintf(stderr, "chorus-bench run: sequence %zu ended %s after %zu tokens%s%s\n", i,
                   finish_reason_name(res[i].reason), res[i].tokens.size(),
                   res[i].error.empty() ? "" : ": ", res[i].error.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int bench_run(int argc, char** argv) {
  auto args = parse_args(argc, argv);
  if (!args.ok()) return fail(args.message());
  const RunArgs& a = *args;
  StepLog log;
  auto e = open_engine(a, log);
  if (!e.ok()) return fail(e.message());
  Engine& engine = *e->engine;
  const StatsSnapshot info = engine.stats();
  std::printf("model: %s  backend: %s (%s)  prompt %d tokens, generate %d tokens, greedy\n",
              info.model_name.c_str(), info.backend_name.c_str(), info.device_name.c_str(),
              a.prompt_tokens, a.gen_tokens);
  print_header();
  std::map<int, std::vector<SeqResult>> batched;  // N -> results of sequences 0..N-1
  int max_n = 0;
  for (int n : a.parallel) {
    std::vector<int> seqs(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) seqs[static_cast<size_t>(i)] = i;
    log.take();
    int64_t wall_us = 0;
    auto res = run_batch(engine, seqs, a, e->n_vocab, &wall_us);
    if (!all_complete(res, a)) return 1;
    print_row(n, res, log.take());
    batched[n] = std::move(res);
    max_n = std::max(max_n, n);
  }
  // Every sequence alone: the reference the batched runs must equal token for token.
  std::vector<std::vector<int32_t>> solo(static_cast<size_t>(max_n));
  for (int s = 0; s < max_n; ++s) {
    int64_t wall_us = 0;
    auto res = run_batch(engine, {s}, a, e->n_vocab, &wall_us);
    if (!all_complete(res, a)) return 1;
    solo[static_cast<size_t>(s)] = std::move(res[0].tokens);
  }
  for (const auto& [n, res] : batched) {
    for (size_t s = 0; s < res.size(); ++s) {
      const auto& got = res[s].tokens;
      const auto& want = solo[s];
      const auto diff = std::mismatch(got.begin(), got.end(), want.begin());
      if (diff.first != got.end()) {
        std::printf("batched N=%d differs from solo: seq %zu, position %td (%d vs %d)\n", n, s,
                    diff.first - got.begin(), *diff.first, *diff.second);
        std::printf("batch-invariant: no (seq %zu, position %td)\n", s, diff.first - got.begin());
        return 2;
      }
    }
  }
  std::printf("batch-invariant: yes\n");
  return 0;
}
