#pragma once
// Views of a model's tensors inside the mapped GGUF file, validated against the config:
// every tensor present, with the expected shape and a type the engine can compute with.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/model/model_config.h"
#include "engine/quant/tensor_type.h"

namespace chorus {
namespace gguf { class Reader; }

// A 2-D (or 1-D) tensor stored row-major as ggml does: ne0 elements per row, ne1 rows.
struct TensorView {
  std::string name;
  TensorType type = TensorType::F32;
  int64_t ne0 = 0;  // row length (input dimension of a matmul)
  int64_t ne1 = 1;  // rows (output dimension of a matmul)
  const void* data = nullptr;
  size_t size_bytes = 0;

  bool present() const { return data != nullptr; }
  size_t row_bytes() const { return row_size_bytes(type, ne0); }
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
};

struct LayerWeights {
  TensorView attn_norm;          // [n_embd]
  TensorView wq, wk, wv, wo;     // wq [n_embd -> q_dim], wk/wv [n_embd -> kv_dim], wo [q_dim -> n_embd]
  TensorView bq, bk, bv;         // biases (qwen2), [q_dim] / [kv_dim]; absent for llama
  TensorView ffn_norm;           // [n_embd]
  TensorView w_gate, w_up;       // [n_embd -> n_ff]
  TensorView w_down;             // [n_ff -> n_embd]
};

struct ModelWeights {
  TensorView token_embd;         // [n_vocab rows of n_embd]
  TensorView output_norm;        // [n_embd]
  TensorView output;             // LM head [n_embd -> n_vocab]; == token_embd when tied
  std::vector<LayerWeights> layers;

  int64_t total_bytes() const;
  static Result<ModelWeights> from_gguf(const gguf::Reader& r, const ModelConfig& config);
};

}  // namespace chorus
