// chorus-cuda-bench MODEL.gguf [N...] [--trace] [--trace-tuning=SPEC] [--trace-only] [--attn-cluster-max-rows=A,B...] [--attn-chunks-per-block=A,B...]
// [--attn-row-max-rows=A,B...] [--attn-row-warps=A,B...] [--attn-row-split-max-rows=A,B...] [--attn-row-split-parts=A,B...]
// [--attn-row-kv-phases=A,B...]
// [--gemv-x-budget=A,B...] [--gemv-early=A,B...] [--gemv-pair-max-rows=A,B...] [--norm-pass-min-rows=A,B...]
// [--gemv-splits=Q.O.U.D,...] [--tuning=SPEC]...: the CUDA backend alone
// (no scheduler). For each N:
// N random prompts of 128 tokens prefilled one by one, then 128 greedy decode steps of all
// N together, timed (aggregate decode tok/s). The tokens are checked against each
// sequence decoded alone (batched == solo), again for each listed attention cluster-merge
// limit (attention.h; rows "cA N ..."), decode attention chunks per block (rows "kA N ..."),
// GEMV x chunk budget (CudaTuning; rows "xA N ..."), GEMV early-load bits (gemv.h GemvEarly;
// rows "eA N ..."), the most rows of two-type launches (rows "pA N ...") and the fewest rows
// normalized in a pass of their own (rows "nA N ..."), the row route's limits (rows "rA", "hA":
// split rows up to A rows, "qA": A blocks a split row, "wA": A warps a row block, "vA": row
// blocks staging K and V in A phases, 0 the launch's choice).
// Split counts (CudaTuning::gemv_splits: q|k|v, output, gate|up, down; 0 keeps the
// default) change the rounding, so their rows "sQ.O.U.D N ..." compare against solo runs
// under the same splits. Each --tuning=SPEC (a CHORUS_CUDA_TUNING spec, cuda_tuning.h; one
// setting a flag, any fields) gives rows "[SPEC] N ...", against solo runs under SPEC where it
// changes the rounding (the splits, norm_from_producer).
// With --trace, each N's 128 decode steps run once more with the step trace on
// (cuda/step_trace.h; builds with -DCHORUS_CUDA_STEP_TRACE=ON), and where the steps' time went
// inside the graph is printed per launch kind (those steps' tok/s are not reported: every
// block stamps a timer); --trace-tuning=SPEC does the same under a CHORUS_CUDA_TUNING spec.
// Then a 512-token prefill is timed.
// Before any timing, the CUDA backend's logits are checked against the CPU backend's on the
// same model and tokens (check_against_cpu): a build that is fast because it computes garbage
// fails there (exit code 4), which batched == solo alone would not catch.
//
// chorus-cuda-bench --profile decode|prefill MODEL.gguf [N]: the region for a profiler run
// under `ncu --profile-from-start off`: one eager decode step of N sequences (after warm-up),
// or one 512-token prefill, between cudaProfilerStart and cudaProfilerStop.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cuda_profiler_api.h>

#include "cuda/attention.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_memory.h"
#include "cuda/gemv.h"
#include "engine/backend/cpu_backend.h"
#include "engine/model/model_file.h"
#include "tests/cuda/cuda_test_util.h"

using namespace chorus;

namespace {

constexpr int kPrompt = 128, kGen = 128, kBlocksPerSeq = 48;  // 768 token slots per sequence

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Gen {
  std::vector<std::vector<int32_t>> tokens;  // [seq][step]
  double decode_s = 0;
};

// Sequence `seq`'s block table: kBlocksPerSeq blocks of its own, in order.
std::vector<int32_t> seq_blocks(int seq) {
  std::vector<int32_t> t(kBlocksPerSeq);
  std::iota(t.begin(), t.end(), seq * kBlocksPerSeq);
  return t;
}

// Sequences 0 .. n - 1.
std::vector<int> first_seqs(int n) {
  std::vector<int> seqs(static_cast<size_t>(n));
  std::iota(seqs.begin(), seqs.end(), 0);
  return seqs;
}

// after_step (if set) runs after each timed decode step.
Gen generate(Backend& b, const std::vector<std::vector<int32_t>>& prompts, const std::vector<int>& seqs,
             const std::function<void()>& after_step = {}) {
  Gen g;
  std::vector<std::vector<int32_t>> tables;
  std::vector<int32_t> next;
  for (int s : seqs) {
    tables.push_back(seq_blocks(s));
    PrefillChunk c;
    c.seq.block_table = tables.back();
    c.tokens = prompts[static_cast<size_t>(s)];
    c.output = PrefillChunk::Output::SampleLast;
    auto r = b.prefill(c);
    if (!r) { std::fprintf(stderr, "prefill: %s\n", r.message().c_str()); std::exit(1); }
    next.push_back(r->sampled_token);
  }
  g.tokens.assign(seqs.size(), {});
  const double t0 = now_s();
  for (int step = 0; step < kGen; ++step) {
    DecodeBatch batch;
    for (size_t i = 0; i < seqs.size(); ++i) {
      SeqState st;
      st.block_table = tables[i];
      st.n_past = kPrompt + step;
      batch.seqs.push_back(st);
      batch.tokens.push_back(next[i]);
      g.tokens[i].push_back(next[i]);
    }
    auto r = b.decode(batch);
    if (!r) { std::fprintf(stderr, "decode: %s\n", r.message().c_str()); std::exit(1); }
    next = r->tokens;
    if (after_step) after_step();
  }
  g.decode_s = now_s() - t0;
  return g;
}

// The CUDA backend's logits against the CPU backend's (engine/backend/cpu_backend.h, its own
// kernels and rounding) for the same tokens: every row of a kCheckPrompt-token prompt, then
// kCheckSteps decode steps of the tokens the CUDA backend chose, fed to both. Returns the
// smallest cosine similarity over those rows.
constexpr int kCheckPrompt = 12, kCheckSteps = 3;
constexpr double kCheckMinCosine = 0.99;

// FNV-1a over the bytes of `values`, continuing from `h`: a kernel variant meant to keep the
// bits prints the same digest as the build it replaces (the A/B states "same bits" from it).
constexpr uint64_t kFnv1aBasis = 0xcbf29ce484222325ull;
template <typename T>
uint64_t fnv1a(const std::vector<T>& values, uint64_t h = kFnv1aBasis) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
  for (size_t i = 0; i < values.size() * sizeof(T); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

struct CheckResult {
  double min_cosine = 1.0;
  uint64_t logits_digest = kFnv1aBasis;  // fnv1a of every CUDA logit the check computed
};

Result<CheckResult> check_against_cpu(Backend& gpu, const std::string& path, const std::vector<int32_t>& prompt) {
  BackendOptions o;
  o.max_batch = 1;
  o.context_tokens = 64;
  o.kv_cache_tokens = 64;
  auto cpu = create_cpu_backend(path, o);
  if (!cpu) return make_error("CPU reference backend: " + cpu.message());
  const int n_vocab = gpu.config().n_vocab;
  const std::vector<int32_t> gpu_table = seq_blocks(0);
  const std::vector<int32_t> cpu_table = {0, 1, 2, 3};
  const std::vector<int32_t> tokens(prompt.begin(), prompt.begin() + kCheckPrompt);
  CheckResult out;
  auto compare = [&](const std::vector<float>& g, const std::vector<float>& c, int rows) {
    for (int r = 0; r < rows; ++r) {
      out.min_cosine = std::min(out.min_cosine, cuda::test::cosine(g.data() + static_cast<size_t>(r) * n_vocab,
                                                                   c.data() + static_cast<size_t>(r) * n_vocab, n_vocab));
    }
    out.logits_digest = fnv1a(g, out.logits_digest);
  };
  PrefillChunk pc;
  pc.tokens = tokens;
  pc.logits = LogitsMode::Return;
  pc.seq.block_table = gpu_table;
  auto gp = gpu.prefill(pc);
  if (!gp) return make_error("CUDA prefill: " + gp.message());
  pc.seq.block_table = cpu_table;
  auto cp = (*cpu)->prefill(pc);
  if (!cp) return make_error("CPU prefill: " + cp.message());
  compare(gp->logits, cp->logits, kCheckPrompt);
  std::vector<float> last(gp->logits.end() - n_vocab, gp->logits.end());
  for (int step = 0; step < kCheckSteps; ++step) {
    DecodeBatch batch;
    batch.tokens = {static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin())};
    batch.logits = LogitsMode::Return;
    SeqState st;
    st.n_past = kCheckPrompt + step;
    st.block_table = gpu_table;
    batch.seqs = {st};
    auto gd = gpu.decode(batch);
    if (!gd) return make_error("CUDA decode: " + gd.message());
    batch.seqs[0].block_table = cpu_table;
    auto cd = (*cpu)->decode(batch);
    if (!cd) return make_error("CPU decode: " + cd.message());
    compare(gd->logits, cd->logits, 1);
    last = gd->logits;
  }
  return out;
}

// Kernel-level GEMV timing on the model's own matrices: median of 50 graph-free launches
// after warm-up, with the matrix bytes over the time as effective bandwidth.
void time_gemv(const std::string& path) {
  auto mf = ModelFile::open(path);
  if (!mf) return;
  const LayerWeights& l = (*mf)->weights.layers[0];
  const TensorView* mats[] = {&l.wq, &l.wv, &l.w_gate, &l.w_down, &(*mf)->weights.output};
  cudaStream_t s = nullptr;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::printf("%-22s %5s %7s %4s %3s %9s %9s\n", "matrix", "type", "rows", "M", "S", "us", "GB/s");
  for (const TensorView* t : mats) {
    const cuda::DeviceMatrix m = cuda::upload_matrix(*t);
    const int64_t kpad = int64_t{m.n_tiles} * 256;
    cuda::DeviceBuffer<__half> x(static_cast<size_t>(32 * kpad));
    cudaMemset(x.get(), 0x3c, x.size_bytes());  // 1.0-ish halves (0x3c3c)
    const cuda::GemvSplitShape split =
        t == mats[4] ? cuda::GemvSplitShape{1, m.n_tiles} : cuda::gemv_choose_splits(m.n_rows, m.n_tiles, 132);
    cuda::DeviceBuffer<float> out(static_cast<size_t>(split.n_splits) * 32 * m.n_rows);
    for (int mm : {1, 8, 32}) {
      cuda::GemvParams p;
      p.mats.w[0] = m.ptr(); p.mats.n_rows[0] = static_cast<int32_t>(m.n_rows); p.mats.n_mats = 1;
      p.mats.n_tiles = m.n_tiles; p.mats.record_bytes = m.record_bytes; p.mats.k_elems = static_cast<int32_t>(m.n_cols);
      p.in.x = x.get(); p.in.x_stride = static_cast<int32_t>(kpad); p.n_seqs = mm;
      p.out.kind = cuda::GemvOut::Partials;
      p.split.partials = out.get(); p.split.part_stride = static_cast<int32_t>(m.n_rows);
      p.split.split_stride = int64_t{32} * m.n_rows;
      p.split.n_splits = split.n_splits; p.split.tiles_per_split = split.tiles_per_split;
      std::vector<float> ts;
      for (int rep = 0; rep < 60; ++rep) {
        cudaEventRecord(e0, s);
        cuda::launch_gemv(m.type, p, s);
        cudaEventRecord(e1, s);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (rep >= 10) ts.push_back(ms);
      }
      std::sort(ts.begin(), ts.end());
      const double us = 1e3 * ts[ts.size() / 2];
      std::printf("%-22s %5s %7lld %4d %3d %9.1f %9.0f\n", t->name.c_str(),
                  tensor_type_name(static_cast<uint32_t>(m.type)).c_str(), static_cast<long long>(m.n_rows), mm,
                  split.n_splits, us, m.data.size_bytes() / us / 1e3);
    }
  }
}

int profile(const std::string& what, const std::string& path, int n) {
  cuda::CudaBackendOptions o;
  o.base.max_batch = 32;
  o.base.context_tokens = kBlocksPerSeq * 16;
  o.base.kv_cache_tokens = int64_t{32} * kBlocksPerSeq * 16;
  o.max_prefill_tokens = 512;
  o.graphs = cuda::GraphMode::Eager;
  auto b = cuda::CudaBackend::create(path, o);
  if (!b) { std::fprintf(stderr, "%s\n", b.message().c_str()); return 1; }
  std::mt19937 rng(7);
  const int32_t n_vocab = (*b)->config().n_vocab;
  std::vector<std::vector<int32_t>> tables;
  for (int s = 0; s < 32; ++s) tables.push_back(seq_blocks(s));
  auto prefill = [&](int seq, int n_tokens) {
    PrefillChunk c;
    c.seq.block_table = tables[static_cast<size_t>(seq)];
    std::vector<int32_t> tokens(static_cast<size_t>(n_tokens));
    for (auto& t : tokens) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    c.tokens = tokens;
    c.output = PrefillChunk::Output::SampleLast;
    auto r = (*b)->prefill(c);
    if (!r) { std::fprintf(stderr, "prefill: %s\n", r.message().c_str()); std::exit(1); }
    return r->sampled_token;
  };
  if (what == "prefill") {
    prefill(0, 512);  // warm-up: cuBLASLt plans
    cudaProfilerStart();
    prefill(0, 512);
    cudaProfilerStop();
    return 0;
  }
  std::vector<int32_t> next;
  for (int s = 0; s < n; ++s) next.push_back(prefill(s, kPrompt));
  for (int step = 0; step < 4; ++step) {
    DecodeBatch batch;
    for (int s = 0; s < n; ++s) {
      SeqState st;
      st.block_table = tables[static_cast<size_t>(s)];
      st.n_past = kPrompt + step;
      batch.seqs.push_back(st);
      batch.tokens.push_back(next[static_cast<size_t>(s)]);
    }
    if (step == 3) cudaProfilerStart();
    auto r = (*b)->decode(batch);
    if (step == 3) cudaProfilerStop();
    if (!r) { std::fprintf(stderr, "decode: %s\n", r.message().c_str()); return 1; }
    next = r->tokens;
  }
  return 0;
}

// "FLAGA,B,..." appends "A", "B", ... to out; false if arg is not that flag.
bool parse_list(const std::string& arg, const std::string& flag, std::vector<std::string>& out) {
  if (arg.rfind(flag, 0) != 0) return false;
  for (size_t at = flag.size(); at < arg.size();) {
    const size_t comma = std::min(arg.find(',', at), arg.size());
    out.push_back(arg.substr(at, comma - at));
    at = comma + 1;
  }
  return true;
}

// The same for integers.
bool parse_int_list(const std::string& arg, const std::string& flag, std::vector<int>& out) {
  std::vector<std::string> items;
  if (!parse_list(arg, flag, items)) return false;
  for (const std::string& v : items) out.push_back(std::atoi(v.c_str()));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "--profile") {
    return profile(argv[2], argv[3], argc >= 5 ? std::atoi(argv[4]) : 1);
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: chorus-cuda-bench MODEL.gguf [N ...]\n");
    return 2;
  }
  std::vector<int> ns;
  std::vector<int> cluster_max_rows;  // --attn-cluster-max-rows=A,B,...: the decode rows again for each
  std::vector<int> chunks_per_block;  // --attn-chunks-per-block=A,B,...: the same per attention chunks per block
  std::vector<int> row_max_rows;      // --attn-row-max-rows=A,B,...: the same per attention row-route limit
  std::vector<int> row_warps;         // --attn-row-warps=A,B,...: the same per row-block warps (row route on)
  std::vector<int> row_split_rows;    // --attn-row-split-max-rows=A,B,...: the same per row-split limit
  std::vector<int> row_split_parts;   // --attn-row-split-parts=A,B,...: the same per blocks a split row
  std::vector<int> row_kv_phases;     // --attn-row-kv-phases=A,B,...: the same per row-block staging phases
  std::vector<int> x_budgets;         // --gemv-x-budget=A,B,...: the same per GEMV x budget (bytes)
  std::vector<int> early_loads;       // --gemv-early=A,B,...: the same per GemvEarly bit mask
  std::vector<int> pair_max_rows;     // --gemv-pair-max-rows=A,B,...: the same per two-type launch limit
  std::vector<int> norm_pass_rows;    // --norm-pass-min-rows=A,B,...: the same per norm pass threshold
  std::vector<std::string> splits;    // --gemv-splits=Q.O.U.D,...: the same per split override
  std::vector<std::string> tuning_specs;  // --tuning=SPEC (one a flag: SPEC has commas)
  // --trace, --trace-tuning=SPEC (each flag one run; SPEC as CHORUS_CUDA_TUNING, cuda_tuning.h):
  // a traced run of each N after the decode rows, with the defaults or under SPEC.
  std::vector<std::string> trace_specs;
  bool trace_only = false;  // --trace-only: the traced runs alone (no timed rows, no prefill)
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (parse_int_list(arg, "--attn-cluster-max-rows=", cluster_max_rows)) continue;
    if (parse_int_list(arg, "--attn-chunks-per-block=", chunks_per_block)) continue;
    if (parse_int_list(arg, "--attn-row-max-rows=", row_max_rows)) continue;
    if (parse_int_list(arg, "--attn-row-warps=", row_warps)) continue;
    if (parse_int_list(arg, "--attn-row-split-max-rows=", row_split_rows)) continue;
    if (parse_int_list(arg, "--attn-row-split-parts=", row_split_parts)) continue;
    if (parse_int_list(arg, "--attn-row-kv-phases=", row_kv_phases)) continue;
    if (parse_int_list(arg, "--gemv-x-budget=", x_budgets)) continue;
    if (parse_int_list(arg, "--gemv-early=", early_loads)) continue;
    if (parse_int_list(arg, "--gemv-pair-max-rows=", pair_max_rows)) continue;
    if (parse_int_list(arg, "--norm-pass-min-rows=", norm_pass_rows)) continue;
    if (parse_list(arg, "--gemv-splits=", splits)) continue;
    if (arg == "--trace") {
      trace_specs.push_back("");
      continue;
    }
    if (arg == "--trace-only") {
      trace_only = true;
      continue;
    }
    if (arg.rfind("--tuning=", 0) == 0) {
      tuning_specs.push_back(arg.substr(9));
      continue;
    }
    if (arg.rfind("--trace-tuning=", 0) == 0) {
      trace_specs.push_back(arg.substr(15));
      continue;
    }
    ns.push_back(std::atoi(argv[i]));
  }
  if (ns.empty()) ns = {1, 8, 32};
  // --gemv-splits=Q.O.U.D is --tuning=gemv_splits=Q.O.U.D under its own row label.
  for (std::string& spec : splits) spec = "gemv_splits=" + spec;
  // Settings checked before the model loads, so that a typo costs no device time.
  for (const auto& [flag, specs] : {std::pair{"--tuning", &tuning_specs}, std::pair{"--trace-tuning", &trace_specs},
                                    std::pair{"--gemv-splits", &splits}}) {
    for (const std::string& spec : *specs) {
      if (auto t = cuda::parse_cuda_tuning(spec, cuda::CudaTuning{}); !t) {
        std::fprintf(stderr, "%s: %s\n", flag, t.message().c_str());
        return 2;
      }
    }
  }
  const int max_n = *std::max_element(ns.begin(), ns.end());
  cuda::CudaBackendOptions o;
  o.base.max_batch = 32;
  o.base.context_tokens = kBlocksPerSeq * 16;
  o.base.kv_cache_tokens = int64_t{32} * kBlocksPerSeq * 16;
  o.max_prefill_tokens = 512;
  const double tl = now_s();
  auto b = cuda::CudaBackend::create(argv[1], o);
  if (!b) { std::fprintf(stderr, "%s\n", b.message().c_str()); return 1; }
  std::printf("loaded %s on %s in %.1f s (weights %.0f MiB)\n", argv[1], (*b)->device_name().c_str(), now_s() - tl,
              (*b)->memory().weights_bytes / 1048576.0);
  std::mt19937 rng(2024);
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(max_n), std::vector<int32_t>(kPrompt));
  for (auto& p : prompts) for (auto& t : p) t = static_cast<int32_t>(rng() % static_cast<uint32_t>((*b)->config().n_vocab));
  // The traced runs (trace_specs); 0, or the exit code of a refused setting.
  auto run_traces = [&]() -> int {
    for (const std::string& spec : trace_specs) {
      const cuda::CudaTuning base = (*b)->tuning();
      auto t = cuda::parse_cuda_tuning(spec, base);
      if (!t) {
        std::fprintf(stderr, "--trace-tuning: %s\n", t.message().c_str());
        return 2;
      }
      (*b)->set_tuning(*t);
      if (Status st = (*b)->set_step_trace(true); !st) {
        std::fprintf(stderr, "--trace: %s\n", st.message().c_str());
        return 2;
      }
      for (int n : ns) {
        const std::vector<int> seqs = first_seqs(n);
        generate(**b, prompts, seqs);  // capture the traced graphs
        std::vector<std::vector<cuda::TraceRecord>> steps;
        generate(**b, prompts, seqs, [&] { steps.push_back((*b)->read_step_trace()); });
        std::printf("N=%d %s%s", n, spec.empty() ? "" : ("[" + spec + "] ").c_str(),
                    cuda::format_trace(cuda::summarize_trace(steps)).c_str());
      }
      (void)(*b)->set_step_trace(false);
      (*b)->set_tuning(base);
    }
    return 0;
  };
  if (trace_only) return run_traces();
  const double tc = now_s();
  auto check = check_against_cpu(**b, argv[1], prompts[0]);
  if (!check) { std::fprintf(stderr, "reference check: %s\n", check.message().c_str()); return 1; }
  std::printf("reference: CPU backend, %d prompt rows + %d decode steps: min cosine %.6f (bar %.2f) in %.1f s; "
              "CUDA logits digest %016llx\n",
              kCheckPrompt, kCheckSteps, check->min_cosine, kCheckMinCosine, now_s() - tc,
              static_cast<unsigned long long>(check->logits_digest));
  if (check->min_cosine < kCheckMinCosine) {
    std::fprintf(stderr, "the CUDA logits do not match the CPU backend's: no figures for a wrong result\n");
    return 4;
  }
  time_gemv(argv[1]);

  generate(**b, prompts, {0});  // warm-up (graph capture, cuBLASLt plans)
  // Solo reference for each sequence.
  std::vector<std::vector<int32_t>> solo(static_cast<size_t>(max_n));
  for (int s = 0; s < max_n; ++s) solo[static_cast<size_t>(s)] = generate(**b, prompts, {s}).tokens[0];
  uint64_t tokens_digest = kFnv1aBasis;
  for (const std::vector<int32_t>& t : solo) tokens_digest = fnv1a(t, tokens_digest);
  std::printf("greedy tokens digest: %016llx (%d sequences alone, %d steps each)\n",
              static_cast<unsigned long long>(tokens_digest), max_n, kGen);

  std::printf("tuning: %s\n", cuda::format_cuda_tuning((*b)->tuning()).c_str());
  std::printf("%-4s %12s %12s %s\n", "N", "decode tok/s", "step ms", "batched==solo");
  bool all_ok = true;
  auto decode_rows = [&](const char* prefix) {
    for (int n : ns) {
      const std::vector<int> seqs = first_seqs(n);
      generate(**b, prompts, seqs);  // warm this shape's graph
      const Gen g = generate(**b, prompts, seqs);
      bool ok = true;
      for (int s = 0; s < n; ++s) ok = ok && g.tokens[static_cast<size_t>(s)] == solo[static_cast<size_t>(s)];
      all_ok = all_ok && ok;
      std::printf("%s%-4d %12.0f %12.3f %s\n", prefix, n, n * kGen / g.decode_s, 1e3 * g.decode_s / kGen,
                  ok ? "yes" : "NO");
    }
  };
  decode_rows("");
  if (int rc = run_traces(); rc != 0) return rc;
  const cuda::CudaTuning defaults = (*b)->tuning();
  // The decode rows again under `t` (labelled `prefix`), then the defaults back.
  auto tuned_rows = [&](const cuda::CudaTuning& t, const std::string& prefix) {
    (*b)->set_tuning(t);
    decode_rows(prefix.c_str());
    (*b)->set_tuning(defaults);
  };
  // Rows "<letter><value> N ...": the decode rows again with one CudaTuning field set to each value.
  const struct {
    const char* prefix;
    const std::vector<int>& values;
    int32_t cuda::CudaTuning::*field;
  } int_settings[] = {
      {"c", cluster_max_rows, &cuda::CudaTuning::attn_cluster_max_rows},  // attention cluster merge up to N rows
      {"k", chunks_per_block, &cuda::CudaTuning::attn_chunks_per_block},  // chunks per attention block (counters)
      {"r", row_max_rows, &cuda::CudaTuning::attn_row_max_rows},          // attention row route up to N rows
      {"h", row_split_rows, &cuda::CudaTuning::attn_row_split_max_rows},   // rows split over blocks up to N rows
      {"q", row_split_parts, &cuda::CudaTuning::attn_row_split_parts},     // blocks a split row
      {"v", row_kv_phases, &cuda::CudaTuning::attn_row_kv_phases},         // row blocks' K/V staging phases
      {"x", x_budgets, &cuda::CudaTuning::gemv_x_budget_bytes},          // GEMV x chunks in that budget
      {"e", early_loads, &cuda::CudaTuning::gemv_early_loads},            // GemvEarly bits
      {"p", pair_max_rows, &cuda::CudaTuning::gemv_pair_max_rows},        // two-type launches up to N rows
      {"n", norm_pass_rows, &cuda::CudaTuning::norm_pass_min_rows},       // a norm pass from N rows on
  };
  for (const auto& setting : int_settings) {
    for (int v : setting.values) {
      cuda::CudaTuning t = defaults;
      t.*setting.field = v;
      tuned_rows(t, setting.prefix + std::to_string(v) + " ");
    }
  }
  for (int w : row_warps) {  // rows "w<warps> N ...": the row route at every N with blocks of that many warps
    cuda::CudaTuning t = defaults;
    t.attn_row_max_rows = cuda::kAttnMaxRowsPerLaunch;
    t.attn_row_warps = w;
    tuned_rows(t, "w" + std::to_string(w) + " ");
  }
  auto solo_runs = [&] {
    for (int s = 0; s < max_n; ++s) solo[static_cast<size_t>(s)] = generate(**b, prompts, {s}).tokens[0];
  };
  // The decode rows under a spec (checked above). Split counts and where the norms' f16 inputs
  // are rounded (norm_from_producer) change the rounding, so where the spec changes them the
  // rows compare against solo runs under the same setting.
  auto spec_rows = [&](const std::string& spec, const std::string& prefix) {
    const cuda::CudaTuning t = *cuda::parse_cuda_tuning(spec, defaults);
    const bool new_rounding =
        t.gemv_splits != defaults.gemv_splits || t.norm_from_producer != defaults.norm_from_producer;
    if (new_rounding) {
      (*b)->set_tuning(t);
      solo_runs();
    }
    tuned_rows(t, prefix);
    if (new_rounding) solo_runs();  // the defaults' again, for the rows after these
  };
  for (const std::string& spec : tuning_specs) spec_rows(spec, "[" + spec + "] ");
  // Rows "sQ.O.U.D N ...".
  for (const std::string& spec : splits) spec_rows(spec, "s" + spec.substr(spec.find('=') + 1) + " ");
  // Prefill of one 512-token prompt (median of 5).
  std::vector<int32_t> long_prompt(512);
  for (auto& t : long_prompt) t = static_cast<int32_t>(rng() % static_cast<uint32_t>((*b)->config().n_vocab));
  const std::vector<int32_t> table = seq_blocks(0);
  std::vector<double> times;
  for (int rep = 0; rep < 6; ++rep) {
    PrefillChunk c;
    c.seq.block_table = table;
    c.tokens = long_prompt;
    c.output = PrefillChunk::Output::SampleLast;
    const double t0 = now_s();
    auto r = (*b)->prefill(c);
    if (!r) { std::fprintf(stderr, "prefill: %s\n", r.message().c_str()); return 1; }
    if (rep > 0) times.push_back(now_s() - t0);
  }
  std::sort(times.begin(), times.end());
  std::printf("prefill 512 tokens: %.2f ms (median of 5)\n", 1e3 * times[times.size() / 2]);
  std::printf("batch-invariant: %s\n", all_ok ? "yes" : "no");
  const auto c = (*b)->counters();
  std::printf("graphs: %lld captures, %lld replays, %lld eager steps\n", static_cast<long long>(c.graph_captures),
              static_cast<long long>(c.graph_replays), static_cast<long long>(c.eager_steps));
  return all_ok ? 0 : 3;
}
