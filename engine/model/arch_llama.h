#pragma once
// The llama-family decoder on the CPU: llama (Llama 2/3, Mistral, SmolLM) and qwen2, which
// differs only in what ModelConfig says (QKV biases, NEOX RoPE, tied embeddings).
#include <cstdint>
#include <vector>

#include "engine/model/forward_batch.h"
#include "engine/model/kv_cache_cpu.h"
#include "engine/model/model_config.h"
#include "engine/model/weights.h"

namespace chorus {
class ThreadPool;

class LlamaCpu {
 public:
  LlamaCpu(const ModelConfig& config, const ModelWeights& weights);

  // Runs every row through all layers, writing K/V for each row into the cache (so later
  // rows of the same sequence attend to earlier ones), and leaves the output-normed hidden
  // state of each row in `hidden` [n_rows][n_embd].
  void forward(ThreadPool& pool, const ForwardBatch& batch, CpuKvCache& kv, std::vector<float>& hidden) const;

  // logits [n_rows][n_vocab] from normed hidden rows [n_rows][n_embd].
  void lm_head(ThreadPool& pool, const float* hidden, int64_t n_rows, float* logits) const;

 private:
  struct LayerVectors {
    std::vector<float> attn_norm, ffn_norm, bq, bk, bv;  // dequantized 1-D weights
  };
  void attention(ThreadPool& pool, const ForwardBatch& batch, CpuKvCache& kv, int32_t layer,
                 const float* q, float* out) const;

  const ModelConfig& c_;
  const ModelWeights& w_;
  std::vector<LayerVectors> layer_vectors_;
  std::vector<float> output_norm_;
};

}  // namespace chorus
