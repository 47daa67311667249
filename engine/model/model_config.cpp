#include "engine/model/model_config.h"

#include "engine/gguf/gguf_reader.h"

namespace chorus {
namespace {

Result<int32_t> get_dim(const gguf::Reader& r, const std::string& key, int64_t max_value) {
  auto v = r.get_uint(key);
  if (!v) return v.error();
  if (*v == 0 || static_cast<int64_t>(*v) > max_value) {
    return make_error(r.path() + ": metadata " + key + " = " + std::to_string(*v) + " is out of range");
  }
  return static_cast<int32_t>(*v);
}

}  // namespace

Result<ModelConfig> ModelConfig::from_gguf(const gguf::Reader& r) {
  ModelConfig c;
  auto arch = r.get_string("general.architecture");
  if (!arch) return arch.error();
  c.arch_name = *arch;
  if (c.arch_name == "llama") {
    c.arch = Arch::Llama;
    c.rope_style = RopeStyle::Normal;
  } else if (c.arch_name == "qwen2") {
    c.arch = Arch::Qwen2;
    c.rope_style = RopeStyle::Neox;
    c.has_qkv_bias = true;
  } else {
    return make_error(r.path() + ": unsupported architecture '" + c.arch_name +
                      "' (this build runs llama and qwen2)");
  }
  c.model_name = r.get_string_or("general.name", "");
  const std::string a = c.arch_name + ".";
  constexpr int64_t kBig = 1 << 24;
  auto n_embd = get_dim(r, a + "embedding_length", kBig);
  if (!n_embd) return n_embd.error();
  auto n_layers = get_dim(r, a + "block_count", 4096);
  if (!n_layers) return n_layers.error();
  auto n_heads = get_dim(r, a + "attention.head_count", 4096);
  if (!n_heads) return n_heads.error();
  auto n_ff = get_dim(r, a + "feed_forward_length", kBig);
  if (!n_ff) return n_ff.error();
  c.n_embd = *n_embd;
  c.n_layers = *n_layers;
  c.n_heads = *n_heads;
  c.n_ff = *n_ff;
  c.n_kv_heads = static_cast<int32_t>(r.get_uint_or(a + "attention.head_count_kv", c.n_heads));
  if (c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0) {
    return make_error(r.path() + ": attention.head_count_kv must divide head_count");
  }
  if (c.n_embd % c.n_heads != 0 && !r.find(a + "attention.key_length")) {
    return make_error(r.path() + ": embedding_length is not a multiple of head_count");
  }
  c.head_dim = static_cast<int32_t>(r.get_uint_or(a + "attention.key_length", c.n_embd / c.n_heads));
  if (c.head_dim <= 0 || c.head_dim > 1024 || c.head_dim % 2 != 0) {
    return make_error(r.path() + ": unsupported head dimension " + std::to_string(c.head_dim));
  }
  c.n_ctx_train = static_cast<int32_t>(r.get_uint_or(a + "context_length", 2048));
  c.rope_dim = static_cast<int32_t>(r.get_uint_or(a + "rope.dimension_count", c.head_dim));
  if (c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    return make_error(r.path() + ": rope.dimension_count must be even and at most the head dimension");
  }
  c.rope_base = static_cast<float>(r.get_float_or(a + "rope.freq_base", 10000.0));
  c.rms_eps = static_cast<float>(r.get_float_or(a + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(c.rope_base > 0.0f) || !(c.rms_eps > 0.0f)) {
    return make_error(r.path() + ": rope.freq_base and layer_norm_rms_epsilon must be positive");
  }
  // Vocabulary size: from metadata when present, else from the embedding table.
  const gguf::TensorInfo* embd = r.find_tensor("token_embd.weight");
  if (!embd) return make_error(r.path() + ": missing tensor token_embd.weight");
  c.n_vocab = static_cast<int32_t>(r.get_uint_or(a + "vocab_size", static_cast<uint64_t>(embd->ne[1])));
  if (embd->ne[1] != c.n_vocab || embd->ne[0] != c.n_embd) {
    return make_error(r.path() + ": token_embd.weight has shape " + embd->shape_string() +
                      ", expected [" + std::to_string(c.n_embd) + ", " + std::to_string(c.n_vocab) + "]");
  }
  c.tied_embeddings = r.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace chorus
