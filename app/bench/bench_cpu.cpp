// chorus-bench cpu: prefill and single-sequence decode speed of the CPU backend. One untimed
// warm-up pass gives the reference tokens; every timed repetition must reproduce them, so a
// fast but wrong forward pass cannot look good. Figures are medians over the repetitions.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "app/bench/bench_commands.h"
#include "engine/model/default_model.h"
#include "engine/backend/cpu_backend.h"
#include "engine/backend/solo_run.h"

namespace {

using namespace chorus;
using Clock = std::chrono::steady_clock;

int fail(const std::string& message) {
  std::fprintf(stderr, "chorus-bench cpu: %s\n", message.c_str());
  return 1;
}


struct CpuArgs {
  std::string model = default_model_path();
  int32_t threads = 0;
  int32_t prompt_tokens = 128;
  int32_t gen_tokens = 64;
  int32_t reps = 5;
};

Result<int32_t> parse_count(const std::string& name, const char* text, long lo, long hi) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) {
    return make_error(name + ": expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
                      ", got '" + text + "'");
  }
  return static_cast<int32_t>(v);
}

Result<CpuArgs> parse_args(int argc, char** argv) {
  CpuArgs a;
  struct IntOption { const char* name; int32_t* dst; long lo, hi; };
  const IntOption ints[] = {{"--threads", &a.threads, 0, 1024},
                            {"--prompt-tokens", &a.prompt_tokens, 1, 32768},
                            {"--gen-tokens", &a.gen_tokens, 2, 32768},
                            {"--reps", &a.reps, 1, 1000}};
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) return make_error(k + ": missing value (or unknown option)");
    const char* v = argv[++i];
    if (k == "--model") {
      a.model = v;
      continue;
    }
    const IntOption* opt = nullptr;
    for (const IntOption& o : ints) {
      if (k == o.name) opt = &o;
    }
    if (!opt) return make_error("unknown option " + k);
    auto n = parse_count(k, v, opt->lo, opt->hi);
    if (!n) return n.error();
    *opt->dst = *n;
  }
  return a;
}

// Deterministic token ids spread over the vocabulary: the benchmark needs no tokenizer.
std::vector<int32_t> synthetic_prompt(int32_t n_tokens, int32_t n_vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n_tokens));
  uint64_t x = 0x2545F4914F6CDD1Dull;
  for (int32_t& id : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(n_vocab));
  }
  return ids;
}

struct RepTimes {
  double t_prefill_s = 0.0;
  double t_decode_s = 0.0;
};

// One timed pass: prefill the prompt in the backend's chunk size, then greedy-decode
// (gen - 1 steps; the first generated token comes from the prefill).
Result<RepTimes> timed_pass(Backend& backend, const std::vector<int32_t>& prompt, int32_t n_gen,
                            const std::vector<int32_t>& block_table, std::vector<int32_t>& generated) {
  RepTimes t;
  SeqState seq;
  seq.block_table = block_table;
  generated.clear();
  const size_t chunk = static_cast<size_t>(std::max(1, backend.max_prefill_tokens()));
  const auto t0 = Clock::now();
  int32_t next = -1;
  for (size_t start = 0; start < prompt.size(); start += chunk) {
    PrefillChunk c;
    seq.n_past = static_cast<int32_t>(start);
    c.seq = seq;
    c.tokens = std::span<const int32_t>(prompt.data() + start, std::min(chunk, prompt.size() - start));
    c.output = start + c.tokens.size() == prompt.size() ? PrefillChunk::Output::SampleLast : PrefillChunk::Output::None;
    auto r = backend.prefill(c);
    if (!r) return r.error();
    next = r->sampled_token;
  }
  const auto t1 = Clock::now();
  generated.push_back(next);
  for (int32_t g = 1; g < n_gen; ++g) {
    DecodeBatch batch;
    seq.n_past = static_cast<int32_t>(prompt.size()) + g - 1;
    seq.sample_index = static_cast<uint64_t>(g);
    batch.seqs.push_back(seq);
    batch.tokens.push_back(next);
    auto r = backend.decode(batch);
    if (!r) return r.error();
    next = r->tokens[0];
    generated.push_back(next);
  }
  const auto t2 = Clock::now();
  t.t_prefill_s = std::chrono::duration<double>(t1 - t0).count();
  t.t_decode_s = std::chrono::duration<double>(t2 - t1).count();
  return t;
}

struct Stat {
  double median, lo, hi;
};

Stat stat_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return Stat{median, v.front(), v.back()};
}

void print_row(const char* phase, int32_t n_tokens, const Stat& tok_s) {
  std::printf("%-8s %7d %12.1f %10.1f %10.1f %10.2f\n", phase, n_tokens, tok_s.median, tok_s.lo, tok_s.hi,
              1000.0 / tok_s.median);
}

}  // namespace

int bench_cpu(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::printf("usage: chorus-bench cpu [--model M.gguf] [--threads N] [--prompt-tokens 128]\n"
                  "                        [--gen-tokens 64] [--reps 5]\n"
                  "prefill and decode (one sequence) tokens per second on the CPU backend;\n"
                  "default model: %s\n", default_model_path().c_str());
      return 0;
    }
  }
  auto args = parse_args(argc, argv);
  if (!args) return fail(args.message());
  if (!std::filesystem::exists(args->model)) {
    return fail(args->model + ": no such file (pass --model, or put the model at the default path)");
  }
  BackendOptions options;
  options.n_threads = args->threads;
  options.context_tokens = args->prompt_tokens + args->gen_tokens + 16;
  options.kv_cache_tokens = options.context_tokens;
  options.max_batch = 1;
  auto backend = create_cpu_backend(args->model, options);
  if (!backend) return fail(backend.message());
  Backend& be = **backend;
  const ModelConfig& cfg = be.config();
  const std::vector<int32_t> prompt = synthetic_prompt(args->prompt_tokens, cfg.n_vocab);

  // Warm-up (page-in of the mapped weights, allocator, caches) and the reference tokens.
  SoloRunOptions solo;
  solo.n_generate = args->gen_tokens;
  auto reference = solo_run(be, prompt, solo);
  if (!reference) return fail("warm-up: " + reference.message());

  const KvLayout kv = be.kv_layout();
  const int32_t n_total = args->prompt_tokens + args->gen_tokens;
  std::vector<int32_t> table(static_cast<size_t>((n_total + kv.block_tokens - 1) / kv.block_tokens));
  std::iota(table.begin(), table.end(), 0);
  std::vector<double> prefill_tok_s, decode_tok_s;
  std::vector<int32_t> generated;
  for (int32_t rep = 0; rep < args->reps; ++rep) {
    auto t = timed_pass(be, prompt, args->gen_tokens, table, generated);
    if (!t) return fail(t.message());
    if (generated != reference->generated) {
      return fail("repetition " + std::to_string(rep) + " generated different tokens than the warm-up run: "
                  "the CPU forward pass is not deterministic");
    }
    prefill_tok_s.push_back(args->prompt_tokens / t->t_prefill_s);
    decode_tok_s.push_back((args->gen_tokens - 1) / t->t_decode_s);
  }

  const BackendMemory mem = be.memory();
  std::printf("model    %s\n", args->model.c_str());
  std::printf("         %s, %d layers, n_embd %d, vocab %d, weights %.1f MB\n", cfg.arch_name.c_str(), cfg.n_layers,
              cfg.n_embd, cfg.n_vocab, static_cast<double>(mem.weights_bytes) / 1e6);
  std::printf("device   %s\n", be.device_name().c_str());
  std::printf("runs     1 warm-up + %d timed, median (min..max); %d generated tokens checked each run\n\n",
              args->reps, args->gen_tokens);
  std::printf("%-8s %7s %12s %10s %10s %10s\n", "phase", "tokens", "tok/s", "min", "max", "ms/tok");
  print_row("prefill", args->prompt_tokens, stat_of(prefill_tok_s));
  print_row("decode", args->gen_tokens - 1, stat_of(decode_tok_s));
  return 0;
}
