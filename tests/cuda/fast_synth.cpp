// chorus-cuda-synth SHAPE OUT.gguf: a synthetic model for GPU benchmarks, written in seconds.
// Same tensor shapes and q4_k_m type mix as `chorus-bench synth` (engine/model/synth_model),
// but the quantized blocks are random bits with scales chosen so each weight row has RMS
// about 1/sqrt(K), instead of quantized random floats (which takes minutes at 8B). No
// tokenizer: for backend-level benchmarks that feed token ids.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/synth_model.h"
#include "engine/quant/fp16.h"

using namespace chorus;

namespace {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void put16(uint8_t* p, float f) {
  const uint16_t h = quant::f32_to_fp16(f);
  std::memcpy(p, &h, 2);
}

void fill(const synth::TensorPlan& t, uint64_t seed, std::vector<uint8_t>& out) {
  const int64_t k = t.ne[0];
  int64_t n_elems = 1;
  for (int64_t e : t.ne) n_elems *= e;
  out.resize(row_size_bytes(t.type, k) * static_cast<size_t>(n_elems / k));
  if (t.type == TensorType::F32) {
    for (int64_t i = 0; i < n_elems; ++i) {
      const float v = t.init == synth::TensorPlan::Init::NearOne ? 1.0f : 0.02f;
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return;
  }
  uint64_t s = seed;
  for (size_t i = 0; i + 8 <= out.size(); i += 8) {
    const uint64_t r = mix64(s++);
    std::memcpy(out.data() + i, &r, 8);
  }
  const auto traits = *tensor_type_traits(static_cast<uint32_t>(t.type));
  const double inv = 1.0 / std::sqrt(static_cast<double>(k));
  for (size_t b = 0; b < out.size() / traits.block_size_bytes; ++b) {
    uint8_t* p = out.data() + b * traits.block_size_bytes;
    if (t.type == TensorType::Q4_K || t.type == TensorType::Q5_K) {
      const float d = static_cast<float>(inv / 143.0);
      put16(p, d);
      put16(p + 2, d * 7.5f);  // centres d*sc*q - dmin*m on average
    } else if (t.type == TensorType::Q6_K) {
      put16(p + 208, static_cast<float>(inv / 1370.0));
    } else if (t.type == TensorType::Q8_0) {
      put16(p, static_cast<float>(inv / 74.0));
    } else if (t.type == TensorType::F16) {
      for (size_t j = 0; j < traits.block_size_bytes; j += 2) put16(p + j, 0.0f);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: chorus-cuda-synth SHAPE OUT.gguf   (SHAPE: llama3-8b, llama3.2-1b, ...)\n");
    return 2;
  }
  auto shape = synth::shape_by_name(argv[1]);
  if (!shape) { std::fprintf(stderr, "%s\n", shape.message().c_str()); return 2; }
  const synth::ShapeSpec& s = *shape;
  const auto plan = synth::plan_tensors(s, synth::QuantMix::Q4_K_M);
  gguf::Writer w;
  const std::string a = s.arch_name + ".";
  auto u32 = [](uint32_t v) { return gguf::Value::make_u32(v); };
  w.set("general.architecture", gguf::Value::make_string(s.arch_name));
  w.set("general.name", gguf::Value::make_string("fast synthetic " + s.name + " q4_k_m"));
  w.set(a + "context_length", u32(static_cast<uint32_t>(s.n_ctx_train)));
  w.set(a + "embedding_length", u32(static_cast<uint32_t>(s.n_embd)));
  w.set(a + "block_count", u32(static_cast<uint32_t>(s.n_layers)));
  w.set(a + "feed_forward_length", u32(static_cast<uint32_t>(s.n_ff)));
  w.set(a + "attention.head_count", u32(static_cast<uint32_t>(s.n_heads)));
  w.set(a + "attention.head_count_kv", u32(static_cast<uint32_t>(s.n_kv_heads)));
  w.set(a + "rope.dimension_count", u32(static_cast<uint32_t>(s.head_dim())));
  w.set(a + "rope.freq_base", gguf::Value::make_f32(s.rope_base));
  w.set(a + "attention.layer_norm_rms_epsilon", gguf::Value::make_f32(s.rms_eps));
  w.set(a + "vocab_size", u32(static_cast<uint32_t>(s.n_vocab)));
  for (const auto& t : plan) {
    const Status st = w.declare_tensor(t.name, t.type, t.ne);
    if (!st) { std::fprintf(stderr, "%s\n", st.message().c_str()); return 1; }
  }
  const Status st = w.write_file(argv[2], [&](size_t i, std::vector<uint8_t>& out) -> Status {
    fill(plan[i], 0x1234567ull * (i + 1), out);
    return Ok{};
  });
  if (!st) { std::fprintf(stderr, "%s\n", st.message().c_str()); return 1; }
  std::printf("wrote %s (%zu tensors)\n", argv[2], plan.size());
  return 0;
}
