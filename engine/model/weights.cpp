#include "engine/model/weights.h"

#include "engine/gguf/gguf_reader.h"

namespace chorus {
namespace {

enum class Required { Yes, No };

// Looks a tensor up and checks it is [ne0, ne1] (ne1 == 1 for vectors) of a usable type.
Result<TensorView> take(const gguf::Reader& r, const std::string& name, int64_t ne0, int64_t ne1,
                        Required required) {
  const gguf::TensorInfo* t = r.find_tensor(name);
  if (!t) {
    if (required == Required::No) return TensorView{};
    return make_error(r.path() + ": missing tensor " + name);
  }
  const bool shape_ok = t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == 1 && t->ne[3] == 1;
  if (!shape_ok) {
    return make_error(r.path() + ": tensor " + name + " has shape " + t->shape_string() + ", expected [" +
                      std::to_string(ne0) + (ne1 > 1 ? ", " + std::to_string(ne1) : "") + "]");
  }
  auto traits = tensor_type_traits(t->type_id);
  if (!traits || !traits->can_compute) {
    return make_error(r.path() + ": tensor " + name + " has tensor type " + tensor_type_name(t->type_id) +
                      ", which this build cannot compute with (supported: F32 F16 BF16 Q4_0 Q4_1 "
                      "Q5_0 Q5_1 Q8_0 Q4_K Q5_K Q6_K)");
  }
  TensorView v;
  v.name = name;
  v.type = t->type();
  v.ne0 = ne0;
  v.ne1 = ne1;
  v.data = t->data;
  v.size_bytes = t->size_bytes;
  return v;
}

// Norm weights and biases are added element-wise, so they must be plain floats.
Status require_float(const gguf::Reader& r, const TensorView& v) {
  if (!v.present() || v.type == TensorType::F32 || v.type == TensorType::F16 || v.type == TensorType::BF16) return Ok{};
  return make_error(r.path() + ": tensor " + v.name + " must be F32, F16 or BF16, not " +
                    tensor_type_name(static_cast<uint32_t>(v.type)));
}

}  // namespace

int64_t ModelWeights::total_bytes() const {
  int64_t n = static_cast<int64_t>(token_embd.size_bytes + output_norm.size_bytes);
  if (output.data != token_embd.data) n += static_cast<int64_t>(output.size_bytes);
  for (const LayerWeights& l : layers) {
    for (const TensorView* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv,
                                &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down}) {
      n += static_cast<int64_t>(t->size_bytes);
    }
  }
  return n;
}

Result<ModelWeights> ModelWeights::from_gguf(const gguf::Reader& r, const ModelConfig& c) {
  ModelWeights w;
  auto embd = take(r, "token_embd.weight", c.n_embd, c.n_vocab, Required::Yes);
  if (!embd) return embd.error();
  w.token_embd = *embd;
  auto onorm = take(r, "output_norm.weight", c.n_embd, 1, Required::Yes);
  if (!onorm) return onorm.error();
  w.output_norm = *onorm;
  CHORUS_TRY(require_float(r, w.output_norm));
  auto out = take(r, "output.weight", c.n_embd, c.n_vocab, Required::No);
  if (!out) return out.error();
  w.output = out->present() ? *out : w.token_embd;

  const Required bias = c.has_qkv_bias ? Required::Yes : Required::No;
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int32_t il = 0; il < c.n_layers; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    struct Spec { TensorView* dst; const char* name; int64_t ne0, ne1; Required req; };
    const Spec specs[] = {
        {&l.attn_norm, "attn_norm.weight", c.n_embd, 1, Required::Yes},
        {&l.wq, "attn_q.weight", c.n_embd, c.q_dim(), Required::Yes},
        {&l.wk, "attn_k.weight", c.n_embd, c.kv_dim(), Required::Yes},
        {&l.wv, "attn_v.weight", c.n_embd, c.kv_dim(), Required::Yes},
        {&l.wo, "attn_output.weight", c.q_dim(), c.n_embd, Required::Yes},
        {&l.bq, "attn_q.bias", c.q_dim(), 1, bias},
        {&l.bk, "attn_k.bias", c.kv_dim(), 1, bias},
        {&l.bv, "attn_v.bias", c.kv_dim(), 1, bias},
        {&l.ffn_norm, "ffn_norm.weight", c.n_embd, 1, Required::Yes},
        {&l.w_gate, "ffn_gate.weight", c.n_embd, c.n_ff, Required::Yes},
        {&l.w_up, "ffn_up.weight", c.n_embd, c.n_ff, Required::Yes},
        {&l.w_down, "ffn_down.weight", c.n_ff, c.n_embd, Required::Yes},
    };
    for (const Spec& s : specs) {
      auto t = take(r, p + s.name, s.ne0, s.ne1, s.req);
      if (!t) return t.error();
      *s.dst = *t;
    }
    for (const TensorView* v : {&l.attn_norm, &l.ffn_norm, &l.bq, &l.bk, &l.bv}) CHORUS_TRY(require_float(r, *v));
  }
  return w;
}

}  // namespace chorus
