#pragma once
// Synthetic models: GGUF files with the exact tensor shapes, quant mix and metadata of real
// ones (Llama 3 8B, Llama 3.2 1B, Qwen2.5 1.5B, and tiny test shapes), filled with seeded
// random weights whose scales keep activations O(1) through every layer. They exercise the
// loaders and kernels at real sizes without shipping multi-gigabyte downloads; the text they
// generate is meaningless but deterministic. llama.cpp can load them too: keys, tensor
// names and tokenizer follow its conventions.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/quant/tensor_type.h"

namespace chorus::synth {

enum class TokenizerFamily { Llama3, Qwen2 };  // special tokens, pre-tokenizer, chat template

struct ShapeSpec {
  std::string name;       // as given on the command line, e.g. "llama3-8b"
  std::string arch_name;  // general.architecture: "llama" or "qwen2"
  TokenizerFamily tokenizer = TokenizerFamily::Llama3;
  int32_t n_embd = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t n_ff = 0;
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool qkv_bias = false;
  bool tied_embeddings = false;  // no output.weight; the LM head reuses token_embd

  int32_t head_dim() const { return n_embd / n_heads; }
};

// "llama3-8b", "llama3.2-1b", "qwen2.5-1.5b", "tiny", "tiny-qwen2".
Result<ShapeSpec> shape_by_name(const std::string& name);
std::vector<std::string> shape_names();

// Which tensor type each matrix gets, after llama.cpp's file types of the same name.
enum class QuantMix { Q4_K_M, Q8_0, F16 };
Result<QuantMix> quant_mix_by_name(const std::string& name);  // "q4_k_m", "q8_0", "f16"
const char* quant_mix_name(QuantMix mix);

struct TensorPlan {
  std::string name;
  TensorType type = TensorType::F32;
  std::vector<int64_t> ne;  // ne[0] is the row length
  enum class Init { Normal, NearOne } init = Init::Normal;
  float stddev = 0.0f;      // of the random part
};

// Every tensor of the model, in file order, with its type under `mix`.
std::vector<TensorPlan> plan_tensors(const ShapeSpec& shape, QuantMix mix);

struct SynthVocab {
  std::vector<std::string> tokens;  // [n_vocab], byte-level (GPT-2 byte-to-unicode) text
  std::vector<int32_t> token_types; // [n_vocab], 1 normal, 3 control
  std::vector<std::string> merges;  // "left right", in rank order
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;
  int32_t pad_id = -1;
};

// 256 byte tokens, then merged tokens (each the concatenation of an earlier token and a
// byte token, with its merge), then the family's special tokens up to n_vocab.
SynthVocab build_vocab(const ShapeSpec& shape);

struct SynthParams {
  ShapeSpec shape;
  QuantMix mix = QuantMix::Q4_K_M;
  uint64_t seed = 1;
  int32_t n_threads = 0;  // 0: all cores
  // Called after each tensor is produced: (tensors done, tensors total, bytes done).
  std::function<void(size_t, size_t, int64_t)> on_progress;
};

struct SynthSummary {
  int64_t n_params = 0;
  int64_t file_size_bytes = 0;
  size_t n_tensors = 0;
};

// Writes the model to `path`, streaming each tensor as it is generated. The same params
// always give the same bytes, whatever the thread count.
Result<SynthSummary> write_synth_model(const std::string& path, const SynthParams& params);

}  // namespace chorus::synth
