#include "engine/model/arch_llama.h"

#include <cmath>
#include <cstring>

#include "engine/model/cpu_ops.h"
#include "engine/quant/dequant.h"
#include "engine/util/thread_pool.h"

namespace chorus {
namespace {

std::vector<float> to_floats(const TensorView& v) {
  std::vector<float> out;
  if (!v.present()) return out;
  out.resize(static_cast<size_t>(v.ne0 * v.ne1));
  cpu::load_vector(v, out.data());
  return out;
}

const float* or_null(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

}  // namespace

LlamaCpu::LlamaCpu(const ModelConfig& config, const ModelWeights& weights) : c_(config), w_(weights) {
  layer_vectors_.resize(static_cast<size_t>(c_.n_layers));
  for (int32_t il = 0; il < c_.n_layers; ++il) {
    const LayerWeights& l = w_.layers[static_cast<size_t>(il)];
    LayerVectors& lv = layer_vectors_[static_cast<size_t>(il)];
    lv.attn_norm = to_floats(l.attn_norm);
    lv.ffn_norm = to_floats(l.ffn_norm);
    lv.bq = to_floats(l.bq);
    lv.bk = to_floats(l.bk);
    lv.bv = to_floats(l.bv);
  }
  output_norm_ = to_floats(w_.output_norm);
}

void LlamaCpu::attention(ThreadPool& pool, const ForwardBatch& batch, CpuKvCache& kv, int32_t layer,
                         const float* q, float* out) const {
  const int32_t hd = c_.head_dim, n_heads = c_.n_heads;
  const int32_t group = c_.n_heads / c_.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t n_items = batch.n_rows() * n_heads;
  pool.parallel_for(n_items, 4, [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> scores, acc;
    acc.resize(static_cast<size_t>(hd));
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t r = item / n_heads;
      const int32_t h = static_cast<int32_t>(item % n_heads);
      const int32_t kvh = h / group;
      const int32_t pos = batch.positions[static_cast<size_t>(r)];
      const auto& table = batch.block_tables[static_cast<size_t>(batch.seq_of_row[static_cast<size_t>(r)])];
      const float* qh = q + r * c_.q_dim() + static_cast<int64_t>(h) * hd;
      scores.resize(static_cast<size_t>(pos) + 1);
      float max_score = -INFINITY;
      for (int32_t t = 0; t <= pos; ++t) {
        const float s = cpu::dot_f32(qh, kv.k_at(layer, table, t) + static_cast<int64_t>(kvh) * hd, hd) * scale;
        scores[static_cast<size_t>(t)] = s;
        max_score = std::max(max_score, s);
      }
      float sum = 0.0f;
      for (int32_t t = 0; t <= pos; ++t) {
        const float e = std::exp(scores[static_cast<size_t>(t)] - max_score);
        scores[static_cast<size_t>(t)] = e;
        sum += e;
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int32_t t = 0; t <= pos; ++t) {
        const float p = scores[static_cast<size_t>(t)] / sum;
        const float* vh = kv.v_at(layer, table, t) + static_cast<int64_t>(kvh) * hd;
        for (int32_t d = 0; d < hd; ++d) acc[static_cast<size_t>(d)] += p * vh[d];
      }
      std::memcpy(out + r * c_.q_dim() + static_cast<int64_t>(h) * hd, acc.data(), sizeof(float) * static_cast<size_t>(hd));
    }
  });
}

void LlamaCpu::forward(ThreadPool& pool, const ForwardBatch& batch, CpuKvCache& kv, std::vector<float>& hidden) const {
  const int64_t R = batch.n_rows();
  const int64_t E = c_.n_embd, QD = c_.q_dim(), KD = c_.kv_dim(), F = c_.n_ff;
  std::vector<float> x(static_cast<size_t>(R * E));            // [R][E] residual stream
  std::vector<float> hn(static_cast<size_t>(R * E));           // [R][E] normed
  std::vector<float> q(static_cast<size_t>(R * QD)), attn(static_cast<size_t>(R * QD));
  std::vector<float> k(static_cast<size_t>(R * KD)), v(static_cast<size_t>(R * KD));
  std::vector<float> gate(static_cast<size_t>(R * F)), up(static_cast<size_t>(R * F));
  std::vector<float> proj(static_cast<size_t>(R * E));

  for (int64_t r = 0; r < R; ++r) {
    quant::dequantize_row(w_.token_embd.type, w_.token_embd.row(batch.tokens[static_cast<size_t>(r)]),
                          x.data() + r * E, E);
  }
  for (int32_t il = 0; il < c_.n_layers; ++il) {
    const LayerWeights& l = w_.layers[static_cast<size_t>(il)];
    const LayerVectors& lv = layer_vectors_[static_cast<size_t>(il)];
    cpu::rmsnorm(x.data(), lv.attn_norm.data(), hn.data(), R, E, c_.rms_eps);
    cpu::matmul(pool, l.wq, hn.data(), q.data(), R, or_null(lv.bq));
    cpu::matmul(pool, l.wk, hn.data(), k.data(), R, or_null(lv.bk));
    cpu::matmul(pool, l.wv, hn.data(), v.data(), R, or_null(lv.bv));
    for (int64_t r = 0; r < R; ++r) {
      const int32_t pos = batch.positions[static_cast<size_t>(r)];
      cpu::rope(q.data() + r * QD, c_.n_heads, c_.head_dim, c_.rope_dim, pos, c_.rope_base, c_.rope_style);
      cpu::rope(k.data() + r * KD, c_.n_kv_heads, c_.head_dim, c_.rope_dim, pos, c_.rope_base, c_.rope_style);
      const auto& table = batch.block_tables[static_cast<size_t>(batch.seq_of_row[static_cast<size_t>(r)])];
      std::memcpy(kv.k_at(il, table, pos), k.data() + r * KD, sizeof(float) * static_cast<size_t>(KD));
      std::memcpy(kv.v_at(il, table, pos), v.data() + r * KD, sizeof(float) * static_cast<size_t>(KD));
    }
    attention(pool, batch, kv, il, q.data(), attn.data());
    cpu::matmul(pool, l.wo, attn.data(), proj.data(), R);
    for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];

    cpu::rmsnorm(x.data(), lv.ffn_norm.data(), hn.data(), R, E, c_.rms_eps);
    cpu::matmul(pool, l.w_gate, hn.data(), gate.data(), R);
    cpu::matmul(pool, l.w_up, hn.data(), up.data(), R);
    cpu::silu_mul(gate.data(), up.data(), gate.data(), R * F);
    cpu::matmul(pool, l.w_down, gate.data(), proj.data(), R);
    for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
  }
  hidden.resize(static_cast<size_t>(R * E));
  cpu::rmsnorm(x.data(), output_norm_.data(), hidden.data(), R, E, c_.rms_eps);
}

void LlamaCpu::lm_head(ThreadPool& pool, const float* hidden, int64_t n_rows, float* logits) const {
  cpu::matmul(pool, w_.output, hidden, logits, n_rows);
}

}  // namespace chorus
