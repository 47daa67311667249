// chorus-bench synth: writes a synthetic model (real tensor shapes, random weights) so the
// engine can be measured at Llama 3 8B size without downloading one.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/bench/bench_commands.h"
#include "engine/model/synth_model.h"

namespace {

using namespace chorus;

int fail(const std::string& message) {
  std::fprintf(stderr, "chorus-bench synth: %s\n", message.c_str());
  return 1;
}

void print_usage() {
  std::string shapes;
  for (const std::string& s : synth::shape_names()) shapes += (shapes.empty() ? "" : "|") + s;
  std::printf(
      "usage: chorus-bench synth --shape %s\n"
      "                          --type q4_k_m|q8_0|f16 --out F.gguf [--seed S] [--threads N]\n"
      "writes a model with that architecture's exact tensor shapes, quant mix, metadata and a\n"
      "byte-level BPE vocabulary, filled with seeded random weights (same seed, same file)\n",
      shapes.c_str());
}

struct SynthArgs {
  std::string shape, type, out;
  uint64_t seed = 1;
  int32_t threads = 0;
};

Result<uint64_t> parse_u64(const std::string& name, const char* text, uint64_t max_value) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || v > max_value) {
    return make_error(name + ": expected a non-negative integer, got '" + text + "'");
  }
  return static_cast<uint64_t>(v);
}

Result<SynthArgs> parse_args(int argc, char** argv) {
  SynthArgs a;
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) return make_error(k + ": missing value (or unknown option)");
    const char* v = argv[++i];
    if (k == "--shape") {
      a.shape = v;
    } else if (k == "--type") {
      a.type = v;
    } else if (k == "--out") {
      a.out = v;
    } else if (k == "--seed") {
      auto s = parse_u64(k, v, UINT64_MAX);
      if (!s) return s.error();
      a.seed = *s;
    } else if (k == "--threads") {
      auto t = parse_u64(k, v, 1024);
      if (!t) return t.error();
      a.threads = static_cast<int32_t>(*t);
    } else {
      return make_error("unknown option " + k);
    }
  }
  if (a.shape.empty() || a.type.empty() || a.out.empty()) {
    return make_error("--shape, --type and --out are required (see chorus-bench synth --help)");
  }
  return a;
}

}  // namespace

int bench_synth(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      print_usage();
      return 0;
    }
  }
  auto args = parse_args(argc, argv);
  if (!args) return fail(args.message());
  auto shape = synth::shape_by_name(args->shape);
  if (!shape) return fail(shape.message());
  auto mix = synth::quant_mix_by_name(args->type);
  if (!mix) return fail(mix.message());

  synth::SynthParams params;
  params.shape = *shape;
  params.mix = *mix;
  params.seed = args->seed;
  params.n_threads = args->threads;
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  double t_last_print_s = 0.0;
  params.on_progress = [&](size_t done, size_t total, int64_t bytes) {
    const double t = seconds();
    if (done < total && t - t_last_print_s < 1.0) return;  // a line a second is enough
    t_last_print_s = t;
    std::fprintf(stderr, "  %zu/%zu tensors, %.2f GB, %.1f s\n", done, total, static_cast<double>(bytes) / 1e9, t);
  };
  std::printf("writing %s: %s %s, seed %llu\n", args->out.c_str(), shape->name.c_str(),
              synth::quant_mix_name(*mix), static_cast<unsigned long long>(args->seed));
  std::fflush(stdout);
  auto summary = synth::write_synth_model(args->out, params);
  if (!summary) return fail(summary.message());
  const double t_s = seconds();
  std::printf("%s: %zu tensors, %.3f B parameters, %.2f GB in %.1f s (%.0f MB/s)\n", args->out.c_str(),
              summary->n_tensors, static_cast<double>(summary->n_params) / 1e9,
              static_cast<double>(summary->file_size_bytes) / 1e9, t_s,
              static_cast<double>(summary->file_size_bytes) / 1e6 / t_s);
  return 0;
}
