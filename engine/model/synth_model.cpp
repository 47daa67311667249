#include "engine/model/synth_model.h"

#include <cmath>
#include <filesystem>

#include "engine/gguf/gguf_writer.h"
#include "engine/quant/quantize.h"
#include "engine/util/thread_pool.h"

namespace chorus::synth {
namespace {

// ---- shapes ----

ShapeSpec llama_like(std::string name, int32_t n_embd, int32_t n_layers, int32_t n_heads, int32_t n_kv_heads,
                     int32_t n_ff, int32_t n_vocab, int32_t n_ctx, float rope_base, bool tied) {
  ShapeSpec s;
  s.name = std::move(name);
  s.arch_name = "llama";
  s.tokenizer = TokenizerFamily::Llama3;
  s.n_embd = n_embd;
  s.n_layers = n_layers;
  s.n_heads = n_heads;
  s.n_kv_heads = n_kv_heads;
  s.n_ff = n_ff;
  s.n_vocab = n_vocab;
  s.n_ctx_train = n_ctx;
  s.rope_base = rope_base;
  s.rms_eps = 1e-5f;
  s.tied_embeddings = tied;
  return s;
}

ShapeSpec qwen2_like(std::string name, int32_t n_embd, int32_t n_layers, int32_t n_heads, int32_t n_kv_heads,
                     int32_t n_ff, int32_t n_vocab, int32_t n_ctx) {
  ShapeSpec s = llama_like(std::move(name), n_embd, n_layers, n_heads, n_kv_heads, n_ff, n_vocab, n_ctx, 1e6f, true);
  s.arch_name = "qwen2";
  s.tokenizer = TokenizerFamily::Qwen2;
  s.rms_eps = 1e-6f;
  s.qkv_bias = true;
  return s;
}

std::vector<ShapeSpec> all_shapes() {
  return {
      llama_like("llama3-8b", 4096, 32, 32, 8, 14336, 128256, 8192, 500000.0f, false),
      llama_like("llama3.2-1b", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, true),
      qwen2_like("qwen2.5-1.5b", 1536, 28, 12, 2, 8960, 151936, 32768),
      // Test shapes: every row a whole number of K super-blocks, head_dim 64.
      llama_like("tiny", 256, 4, 4, 2, 768, 2048, 2048, 10000.0f, false),
      qwen2_like("tiny-qwen2", 256, 2, 4, 2, 512, 2048, 2048),
  };
}

// ---- quant mix ----

// llama.cpp's Q4_K_M spends 6 bits on attn_v / ffn_down in the first and last eighth of
// the layers and in every third layer between.
bool more_bits_layer(int32_t il, int32_t n_layers) {
  return il < n_layers / 8 || il >= 7 * n_layers / 8 || (il - n_layers / 8) % 3 == 2;
}

enum class Role { Embedding, LmHead, SensitiveMatrix, Matrix, Vector };

TensorType type_for(Role role, QuantMix mix, int64_t row_elems) {
  if (role == Role::Vector) return TensorType::F32;
  if (mix == QuantMix::F16) return TensorType::F16;
  TensorType t = TensorType::Q8_0;
  if (mix == QuantMix::Q4_K_M) {
    t = (role == Role::LmHead || role == Role::SensitiveMatrix) ? TensorType::Q6_K : TensorType::Q4_K;
  }
  // Rows that are not whole blocks fall back the way llama.cpp does, to a finer type.
  if ((t == TensorType::Q4_K || t == TensorType::Q6_K) && row_elems % 256 != 0) t = TensorType::Q8_0;
  if (t == TensorType::Q8_0 && row_elems % 32 != 0) t = TensorType::F16;
  return t;
}

// ---- deterministic random numbers ----

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Approximately standard normal from one 64-bit hash: the sum of four 16-bit uniforms
// (Irwin-Hall), rescaled to unit variance. Tails stop at 3.46 sigma, which is all random
// weights need, and it costs one hash per element.
float unit_normal(uint64_t h) {
  constexpr float kInv = 1.0f / 65536.0f;
  const float s = static_cast<float>(h & 0xFFFF) + static_cast<float>((h >> 16) & 0xFFFF) +
                  static_cast<float>((h >> 32) & 0xFFFF) + static_cast<float>(h >> 48);
  return (s * kInv - 2.0f) * 1.7320508f;  // sum of 4 U(0,1): mean 2, variance 1/3
}

void fill_row(const TensorPlan& plan, uint64_t tensor_key, int64_t row, float* out) {
  const int64_t n = plan.ne[0];
  const uint64_t base = tensor_key + static_cast<uint64_t>(row * n);
  const float mean = plan.init == TensorPlan::Init::NearOne ? 1.0f : 0.0f;
  for (int64_t i = 0; i < n; ++i) out[i] = mean + plan.stddev * unit_normal(mix64(base + static_cast<uint64_t>(i)));
}

// ---- vocabulary ----

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {  // the byte mapping only reaches U+0143
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// GPT-2's byte-to-unicode table: printable Latin-1 bytes stand for themselves, the other 68
// are shifted to U+0100.. in byte order (space becomes 'Ġ').
std::vector<std::string> byte_texts() {
  std::vector<std::string> t(256);
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    t[b] = utf8(printable ? b : next++);
  }
  return t;
}

std::vector<std::string> special_tokens(TokenizerFamily family, int32_t n_special, SynthVocab& v, int32_t first_id) {
  std::vector<std::string> s;
  if (family == TokenizerFamily::Llama3) {
    s = {"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
         "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
         "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"};
    v.bos_id = first_id;
    v.eos_id = first_id + 9;  // <|eot_id|>: the end of a chat turn, as instruct models set it
    v.eot_id = first_id + 9;
    v.pad_id = first_id + 4;
  } else {
    s = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
         "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
         "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"};
    v.bos_id = first_id;
    v.eos_id = first_id + 2;  // <|im_end|>
    v.eot_id = first_id + 2;
    v.pad_id = first_id;
  }
  for (int32_t k = static_cast<int32_t>(s.size()); k < n_special; ++k) {
    s.push_back(family == TokenizerFamily::Llama3 ? "<|reserved_special_token_" + std::to_string(k) + "|>"
                                                  : "[PAD" + std::to_string(first_id + k) + "]");
  }
  s.resize(static_cast<size_t>(n_special));
  return s;
}

// Merged tokens, most "word-like" first: space+letter, letter pairs, space+capital,
// capital+letter, digit pairs and triples; then each word-like token extended by a letter,
// generation by generation, until `n_merges` are made.
void add_merges(SynthVocab& v, const std::vector<std::string>& bytes, int32_t n_merges) {
  auto add = [&](const std::string& left, const std::string& right) {
    if (static_cast<int32_t>(v.merges.size()) >= n_merges) return false;
    v.merges.push_back(left + " " + right);
    v.tokens.push_back(left + right);
    v.token_types.push_back(1);
    return true;
  };
  const std::string space = bytes[' '];
  std::vector<std::string> word_like;
  auto add_word = [&](const std::string& l, const std::string& r) {
    if (add(l, r)) word_like.push_back(l + r);
  };
  for (char c = 'a'; c <= 'z'; ++c) add_word(space, bytes[static_cast<uint8_t>(c)]);
  for (char a = 'a'; a <= 'z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b) add_word(bytes[static_cast<uint8_t>(a)], bytes[static_cast<uint8_t>(b)]);
  for (char c = 'A'; c <= 'Z'; ++c) add_word(space, bytes[static_cast<uint8_t>(c)]);
  for (char a = 'A'; a <= 'Z'; ++a)
    for (char b = 'a'; b <= 'z'; ++b) add_word(bytes[static_cast<uint8_t>(a)], bytes[static_cast<uint8_t>(b)]);
  for (char a = '0'; a <= '9'; ++a)
    for (char b = '0'; b <= '9'; ++b) add(bytes[static_cast<uint8_t>(a)], bytes[static_cast<uint8_t>(b)]);
  for (char a = '0'; a <= '9'; ++a)
    for (char b = '0'; b <= '9'; ++b)
      for (char c = '0'; c <= '9'; ++c)
        add(std::string(1, a) + b, bytes[static_cast<uint8_t>(c)]);
  while (static_cast<int32_t>(v.merges.size()) < n_merges && !word_like.empty()) {
    std::vector<std::string> next;
    for (const std::string& w : word_like) {
      for (char c = 'a'; c <= 'z'; ++c) {
        if (add(w, bytes[static_cast<uint8_t>(c)])) next.push_back(w + c);
      }
    }
    word_like = std::move(next);
  }
}

const char* kLlama3Template =
    "{{- bos_token }}{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + "
    "'<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";
const char* kChatMlTemplate =
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

void set_tokenizer_metadata(gguf::Writer& w, const ShapeSpec& s) {
  SynthVocab v = build_vocab(s);
  const bool llama3 = s.tokenizer == TokenizerFamily::Llama3;
  w.set("tokenizer.ggml.model", gguf::Value::make_string("gpt2"));
  w.set("tokenizer.ggml.pre", gguf::Value::make_string(llama3 ? "llama-bpe" : "qwen2"));
  w.set("tokenizer.ggml.tokens", gguf::Value::make_string_array(v.tokens));
  w.set("tokenizer.ggml.token_type", gguf::Value::make_i32_array(v.token_types));
  w.set("tokenizer.ggml.merges", gguf::Value::make_string_array(v.merges));
  w.set("tokenizer.ggml.bos_token_id", gguf::Value::make_u32(static_cast<uint32_t>(v.bos_id)));
  w.set("tokenizer.ggml.eos_token_id", gguf::Value::make_u32(static_cast<uint32_t>(v.eos_id)));
  w.set("tokenizer.ggml.padding_token_id", gguf::Value::make_u32(static_cast<uint32_t>(v.pad_id)));
  w.set("tokenizer.ggml.add_bos_token", gguf::Value::make_bool(llama3));
  w.set("tokenizer.chat_template", gguf::Value::make_string(llama3 ? kLlama3Template : kChatMlTemplate));
}

uint32_t llama_file_type(QuantMix mix) {
  switch (mix) {
    case QuantMix::F16: return 1;      // LLAMA_FTYPE_MOSTLY_F16
    case QuantMix::Q8_0: return 7;     // LLAMA_FTYPE_MOSTLY_Q8_0
    case QuantMix::Q4_K_M: return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  }
  return 0;
}

void set_model_metadata(gguf::Writer& w, const SynthParams& p) {
  const ShapeSpec& s = p.shape;
  const std::string a = s.arch_name + ".";
  auto u32 = [](int64_t v) { return gguf::Value::make_u32(static_cast<uint32_t>(v)); };
  w.set("general.architecture", gguf::Value::make_string(s.arch_name));
  w.set("general.name", gguf::Value::make_string("synthetic " + s.name + " " + quant_mix_name(p.mix) +
                                                 " seed " + std::to_string(p.seed)));
  w.set("general.file_type", u32(llama_file_type(p.mix)));
  w.set("general.quantization_version", u32(2));
  w.set(a + "context_length", u32(s.n_ctx_train));
  w.set(a + "embedding_length", u32(s.n_embd));
  w.set(a + "block_count", u32(s.n_layers));
  w.set(a + "feed_forward_length", u32(s.n_ff));
  w.set(a + "attention.head_count", u32(s.n_heads));
  w.set(a + "attention.head_count_kv", u32(s.n_kv_heads));
  w.set(a + "rope.dimension_count", u32(s.head_dim()));
  w.set(a + "rope.freq_base", gguf::Value::make_f32(s.rope_base));
  w.set(a + "attention.layer_norm_rms_epsilon", gguf::Value::make_f32(s.rms_eps));
  w.set(a + "vocab_size", u32(s.n_vocab));
  set_tokenizer_metadata(w, s);
}

Status produce_tensor(ThreadPool& pool, const TensorPlan& plan, uint64_t tensor_key, std::vector<uint8_t>& out) {
  const int64_t n_cols = plan.ne[0];
  const int64_t n_rows = plan.ne.size() > 1 ? plan.ne[1] : 1;
  const size_t row_bytes = row_size_bytes(plan.type, n_cols);
  out.resize(row_bytes * static_cast<size_t>(n_rows));
  // About 256 KiB of floats per chunk keeps every core busy on the tall matrices.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / n_cols);
  pool.parallel_for(n_rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(n_cols));  // [n_cols]
    for (int64_t r = begin; r < end; ++r) {
      fill_row(plan, tensor_key, r, row.data());
      quant::quantize_row(plan.type, row.data(), out.data() + static_cast<size_t>(r) * row_bytes, n_cols);
    }
  });
  return Ok{};
}

}  // namespace

std::vector<std::string> shape_names() {
  std::vector<std::string> names;
  for (const ShapeSpec& s : all_shapes()) names.push_back(s.name);
  return names;
}

Result<ShapeSpec> shape_by_name(const std::string& name) {
  std::string known;
  for (const ShapeSpec& s : all_shapes()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  return make_error("unknown model shape '" + name + "' (known: " + known + ")");
}

Result<QuantMix> quant_mix_by_name(const std::string& name) {
  for (QuantMix m : {QuantMix::Q4_K_M, QuantMix::Q8_0, QuantMix::F16}) {
    if (name == quant_mix_name(m)) return m;
  }
  return make_error("unknown model type '" + name + "' (known: q4_k_m, q8_0, f16)");
}

const char* quant_mix_name(QuantMix mix) {
  switch (mix) {
    case QuantMix::Q4_K_M: return "q4_k_m";
    case QuantMix::Q8_0: return "q8_0";
    case QuantMix::F16: return "f16";
  }
  return "?";
}

std::vector<TensorPlan> plan_tensors(const ShapeSpec& s, QuantMix mix) {
  using Init = TensorPlan::Init;
  std::vector<TensorPlan> plans;
  auto add = [&](std::string name, Role role, int64_t ne0, int64_t ne1, Init init, double stddev) {
    TensorPlan p;
    p.name = std::move(name);
    p.type = type_for(role, mix, ne0);
    p.ne = ne1 > 0 ? std::vector<int64_t>{ne0, ne1} : std::vector<int64_t>{ne0};
    p.init = init;
    p.stddev = static_cast<float>(stddev);
    plans.push_back(std::move(p));
  };
  const int64_t E = s.n_embd, Q = int64_t{s.n_heads} * s.head_dim(), KV = int64_t{s.n_kv_heads} * s.head_dim();
  const int64_t F = s.n_ff, V = s.n_vocab;
  // Scales: inputs of every matmul are RMS-normalised (or O(1)), so N(0, 1/fan_in) keeps
  // outputs O(1); the two projections back into the residual stream are further damped by
  // 1/sqrt(2 n_layers) so the stream's norm stays bounded however deep the model is. The
  // LM head's 2/sqrt(n_embd) gives logits of standard deviation ~2: peaked, not one-hot.
  const double in_scale = 1.0 / std::sqrt(double(E));
  const double depth = 1.0 / std::sqrt(2.0 * s.n_layers);
  add("token_embd.weight", s.tied_embeddings ? Role::LmHead : Role::Embedding, E, V, Init::Normal, 2.0 * in_scale);
  for (int32_t il = 0; il < s.n_layers; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const Role sensitive = more_bits_layer(il, s.n_layers) ? Role::SensitiveMatrix : Role::Matrix;
    add(p + "attn_norm.weight", Role::Vector, E, 0, Init::NearOne, 0.05);
    add(p + "attn_q.weight", Role::Matrix, E, Q, Init::Normal, in_scale);
    add(p + "attn_k.weight", Role::Matrix, E, KV, Init::Normal, in_scale);
    add(p + "attn_v.weight", sensitive, E, KV, Init::Normal, in_scale);
    if (s.qkv_bias) {
      add(p + "attn_q.bias", Role::Vector, Q, 0, Init::Normal, 0.1);
      add(p + "attn_k.bias", Role::Vector, KV, 0, Init::Normal, 0.1);
      add(p + "attn_v.bias", Role::Vector, KV, 0, Init::Normal, 0.1);
    }
    add(p + "attn_output.weight", Role::Matrix, Q, E, Init::Normal, depth / std::sqrt(double(Q)));
    add(p + "ffn_norm.weight", Role::Vector, E, 0, Init::NearOne, 0.05);
    add(p + "ffn_gate.weight", Role::Matrix, E, F, Init::Normal, in_scale);
    add(p + "ffn_up.weight", Role::Matrix, E, F, Init::Normal, in_scale);
    add(p + "ffn_down.weight", sensitive, F, E, Init::Normal, depth / std::sqrt(double(F)));
  }
  add("output_norm.weight", Role::Vector, E, 0, Init::NearOne, 0.05);
  if (!s.tied_embeddings) add("output.weight", Role::LmHead, E, V, Init::Normal, 2.0 * in_scale);
  return plans;
}

SynthVocab build_vocab(const ShapeSpec& s) {
  SynthVocab v;
  const std::vector<std::string> bytes = byte_texts();
  v.tokens = bytes;
  v.token_types.assign(256, 1);
  // Llama 3 keeps 256 special ids at the end; Qwen2 pads its 151,665 real ids with
  // [PADn] ids to the embedding size. Small test vocabularies keep 32.
  int32_t n_special = 32;
  if (s.n_vocab >= 100000) n_special = s.tokenizer == TokenizerFamily::Llama3 ? 256 : s.n_vocab - 151643;
  const int32_t first_special = s.n_vocab - n_special;
  add_merges(v, bytes, first_special - 256);
  const int32_t n_regular = static_cast<int32_t>(v.tokens.size());
  for (int32_t id = n_regular; id < first_special; ++id) {  // only if the merges ran out
    v.tokens.push_back("[UNUSED" + std::to_string(id) + "]");
    v.token_types.push_back(5);
  }
  for (std::string& t : special_tokens(s.tokenizer, n_special, v, first_special)) {
    v.tokens.push_back(std::move(t));
    v.token_types.push_back(3);
  }
  return v;
}

Result<SynthSummary> write_synth_model(const std::string& path, const SynthParams& p) {
  const ShapeSpec& s = p.shape;
  if (s.n_heads <= 0 || s.n_embd % s.n_heads != 0 || s.n_kv_heads <= 0 || s.n_heads % s.n_kv_heads != 0) {
    return make_error("model shape " + s.name + ": heads must divide n_embd and kv heads must divide heads");
  }
  gguf::Writer w;
  set_model_metadata(w, p);
  const std::vector<TensorPlan> plans = plan_tensors(s, p.mix);
  SynthSummary summary;
  for (const TensorPlan& t : plans) {
    CHORUS_TRY(w.declare_tensor(t.name, t.type, t.ne));
    summary.n_params += t.ne[0] * (t.ne.size() > 1 ? t.ne[1] : 1);
  }
  summary.n_tensors = plans.size();
  ThreadPool pool(p.n_threads);
  int64_t bytes_done = 0;
  auto source = [&](size_t index, std::vector<uint8_t>& out) -> Status {
    // Every tensor draws from its own stream, so tensors do not depend on each other.
    const uint64_t key = mix64(p.seed * 0x100000001B3ull + index);
    CHORUS_TRY(produce_tensor(pool, plans[index], key, out));
    bytes_done += static_cast<int64_t>(out.size());
    if (p.on_progress) p.on_progress(index + 1, plans.size(), bytes_done);
    return Ok{};
  };
  CHORUS_TRY(w.write_file(path, source));
  std::error_code ec;
  summary.file_size_bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  return summary;
}

}  // namespace chorus::synth
