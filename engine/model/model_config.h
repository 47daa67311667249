#pragma once
// Architecture hyper-parameters, read from GGUF metadata (never guessed).
#include <cstdint>
#include <string>

#include "engine/core/result.h"

namespace chorus {
namespace gguf { class Reader; }

enum class Arch { Llama, Qwen2 };
enum class RopeStyle {
  Normal,  // rotate pairs (2i, 2i+1): llama
  Neox,    // rotate pairs (i, i + rope_dim/2): qwen2
};

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string arch_name;      // general.architecture
  std::string model_name;     // general.name, for display
  int32_t n_vocab = 0;
  int32_t n_embd = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;       // n_embd / n_heads unless the file says otherwise
  int32_t n_ff = 0;           // feed-forward width
  int32_t n_ctx_train = 0;    // context length the model was trained for
  int32_t rope_dim = 0;       // rotated dimensions per head (<= head_dim)
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  RopeStyle rope_style = RopeStyle::Normal;
  bool has_qkv_bias = false;
  bool tied_embeddings = false;  // no output.weight: the LM head reuses token_embd

  int32_t q_dim() const { return n_heads * head_dim; }
  int32_t kv_dim() const { return n_kv_heads * head_dim; }

  static Result<ModelConfig> from_gguf(const gguf::Reader& r);
};

}  // namespace chorus
