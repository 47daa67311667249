#include "engine/backend/cpu_backend.h"

#include <chrono>
#include <fstream>
#include <thread>

#include "engine/model/arch_llama.h"
#include "engine/model/kv_cache_cpu.h"
#include "engine/model/model_file.h"
#include "engine/sample/sampler.h"
#include "engine/util/thread_pool.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;
int64_t us_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "CPU";
}

constexpr int32_t kBlockTokens = 16;
constexpr int32_t kMaxPrefillTokens = 256;

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::unique_ptr<ModelFile> model, const BackendOptions& options)
      : model_(std::move(model)),
        pool_(options.n_threads),
        arch_(model_->config, model_->weights),
        kv_(model_->config.n_layers, model_->config.kv_dim(), kBlockTokens, kv_blocks_for(options)),
        max_batch_(std::max(1, options.max_batch)) {}

  std::string name() const override { return "cpu"; }
  std::string device_name() const override {
    return cpu_model_name() + " (" + std::to_string(pool_.n_threads()) + " threads)";
  }
  const ModelConfig& config() const override { return model_->config; }
  KvLayout kv_layout() const override { return KvLayout{kv_.block_tokens(), kv_.n_blocks()}; }
  int32_t max_batch() const override { return max_batch_; }
  int32_t max_prefill_tokens() const override { return kMaxPrefillTokens; }

  Result<PrefillResult> prefill(const PrefillChunk& chunk) override {
    if (auto st = check_seq(chunk.seq, static_cast<int32_t>(chunk.tokens.size())); !st) return st.error();
    ForwardBatch fb;
    fb.block_tables.push_back(chunk.seq.block_table);
    for (size_t i = 0; i < chunk.tokens.size(); ++i) {
      fb.add_row(chunk.tokens[i], chunk.seq.n_past + static_cast<int32_t>(i), 0);
    }
    if (auto st = check_token_ids(fb.tokens, model_->config.n_vocab); !st) return st.error();
    arch_.forward(pool_, fb, kv_, hidden_);
    PrefillResult out;
    const int64_t V = model_->config.n_vocab, E = model_->config.n_embd, R = fb.n_rows();
    if (chunk.logits == LogitsMode::Return) {
      out.logits.resize(static_cast<size_t>(R * V));
      arch_.lm_head(pool_, hidden_.data(), R, out.logits.data());
    }
    if (chunk.output == PrefillChunk::Output::SampleLast) {
      std::vector<float> last(static_cast<size_t>(V));
      if (!out.logits.empty()) {
        std::copy(out.logits.end() - V, out.logits.end(), last.begin());
      } else {
        arch_.lm_head(pool_, hidden_.data() + (R - 1) * E, 1, last.data());
      }
      out.sampled_token = sample_token(last, chunk.seq.sampling, chunk.seq.history, chunk.seq.sample_index);
    }
    return out;
  }

  Result<DecodeResult> decode(const DecodeBatch& batch) override {
    if (batch.seqs.size() != batch.tokens.size() || batch.seqs.empty()) {
      return make_error("decode: batch needs one token per sequence");
    }
    if (static_cast<int32_t>(batch.seqs.size()) > max_batch_) return make_error("decode: batch larger than max_batch");
    ForwardBatch fb;
    for (size_t s = 0; s < batch.seqs.size(); ++s) {
      if (auto st = check_seq(batch.seqs[s], 1); !st) return st.error();
      fb.block_tables.push_back(batch.seqs[s].block_table);
      fb.add_row(batch.tokens[s], batch.seqs[s].n_past, static_cast<int32_t>(s));
    }
    if (auto st = check_token_ids(fb.tokens, model_->config.n_vocab); !st) return st.error();
    DecodeResult out;
    auto t0 = Clock::now();
    arch_.forward(pool_, fb, kv_, hidden_);
    const int64_t V = model_->config.n_vocab, M = fb.n_rows();
    std::vector<float> logits(static_cast<size_t>(M * V));
    arch_.lm_head(pool_, hidden_.data(), M, logits.data());
    out.times.t_forward_us = us_since(t0);
    auto t1 = Clock::now();
    if (batch.logits == LogitsMode::Return) out.logits = logits;
    out.tokens.resize(static_cast<size_t>(M));
    for (int64_t s = 0; s < M; ++s) {
      const SeqState& seq = batch.seqs[static_cast<size_t>(s)];
      std::span<float> row(logits.data() + s * V, static_cast<size_t>(V));
      out.tokens[static_cast<size_t>(s)] = sample_token(row, seq.sampling, seq.history, seq.sample_index);
    }
    out.times.t_sample_us = us_since(t1);
    return out;
  }

  BackendMemory memory() const override {
    BackendMemory m;
    m.weights_bytes = model_->weights.total_bytes();
    m.kv_cache_bytes = kv_.size_bytes();
    return m;
  }

 private:
  static int32_t kv_blocks_for(const BackendOptions& o) {
    const int64_t tokens = o.kv_cache_tokens > 0 ? o.kv_cache_tokens : std::max<int64_t>(o.context_tokens, 16384);
    return static_cast<int32_t>((tokens + kBlockTokens - 1) / kBlockTokens);
  }

  Status check_seq(const SeqState& s, int32_t n_new) const {
    const int64_t needed_blocks = (static_cast<int64_t>(s.n_past) + n_new + kBlockTokens - 1) / kBlockTokens;
    if (s.n_past < 0 || static_cast<int64_t>(s.block_table.size()) < needed_blocks) {
      return make_error("sequence " + std::to_string(s.seq_id) + ": block table too short for its length");
    }
    for (int32_t b : s.block_table) {
      if (b < 0 || b >= kv_.n_blocks()) return make_error("sequence " + std::to_string(s.seq_id) + ": bad KV block id");
    }
    return Ok{};
  }

  std::unique_ptr<ModelFile> model_;
  mutable ThreadPool pool_;
  LlamaCpu arch_;
  CpuKvCache kv_;
  int32_t max_batch_;
  std::vector<float> hidden_;  // [n_rows][n_embd], reused between steps
};

}  // namespace

Result<std::unique_ptr<Backend>> create_cpu_backend(const std::string& model_path, const BackendOptions& options) {
  auto model = ModelFile::open(model_path);
  if (!model) return model.error();
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(std::move(*model), options));
}

}  // namespace chorus
