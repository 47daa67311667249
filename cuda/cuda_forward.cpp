// The forward pass of CudaBackend: what one step enqueues. Two routes through the layers:
//   GEMV (<= 32 rows: decode steps, short prompt chunks): per layer a QKV product with the
//   attention RMSNorm in front, attention, an output product that adds into the residual
//   stream, a gate/up product with the FFN RMSNorm in front and SwiGLU behind, and a down
//   product that adds into the residual stream (4 GEMV launches, one more per extra weight
//   type). Norm scales travel as per-64-column sums of squares (gemv.h); by default the
//   residual's producer also writes f16(x w) for the next norm and the GEMV behind the norm
//   applies the rows' scales after its product (CudaTuning::norm_from_producer).
//   GEMM (longer prompt chunks): f16 dequantization + cuBLASLt per matrix, then the separate
//   row kernels (layer_ops.h) and the tiled prefill attention.
#include <algorithm>
#include <cmath>

#include "cuda/attention.h"
#include "cuda/cuda_backend.h"
#include "cuda/gemv.h"
#include "cuda/layer_ops.h"
#include "cuda/weight_repack.h"

namespace chorus::cuda {

RopeSpec rope_of(const ModelConfig& c) {
  RopeSpec r;
  r.kind = c.rope_style == RopeStyle::Neox ? RopeKind::Neox : RopeKind::Normal;
  r.rope_dim = c.rope_dim;
  r.base = c.rope_base;
  return r;
}

namespace {

GemvOutput sum_output(float* out, int32_t stride) {
  GemvOutput o;
  o.kind = GemvOut::Sum;
  o.out = out;
  o.out_stride = stride;
  return o;
}

}  // namespace

GemvInput CudaBackend::norm_input(const float* norm_w, int32_t n_rows, int32_t row_begin) {
  const ModelConfig& c = model_->config;
  GemvInput in;
  if (tuning_.norm_from_producer != 0) {
    in.kind = GemvIn::HalfRowScaled;
    in.x = xw_.get() + static_cast<int64_t>(row_begin) * xw_stride_;
    in.x_stride = xw_stride_;
    in.ss = ss_.get() + static_cast<int64_t>(row_begin) * ss_stride_;
    in.ss_stride = ss_stride_;
    in.eps = c.rms_eps;
    return in;
  }
  in.kind = GemvIn::NormF32;
  in.resid = x_.get() + static_cast<int64_t>(row_begin) * c.n_embd;
  in.resid_stride = c.n_embd;
  in.ss = ss_.get() + static_cast<int64_t>(row_begin) * ss_stride_;
  in.ss_stride = ss_stride_;
  in.norm_w = norm_w;
  in.eps = c.rms_eps;
  if (n_rows < tuning_.norm_pass_min_rows) return in;  // the fused route (CudaTuning says when)
  NormRowsParams np;
  np.in = in;
  np.n_cols = c.n_embd;
  np.n_rows = n_rows;
  np.out = h_.get();
  np.out_stride = h_stride_;
  np.trace = trace_slot("norm", 0);
  launch_norm_rows(np, stream_->get());
  return half_input(h_.get());
}

GemvInput CudaBackend::half_input(const __half* x) const {
  GemvInput in;
  in.kind = GemvIn::Half;
  in.x = x;
  in.x_stride = h_stride_;
  return in;
}

const float* CudaBackend::norm_after_layer(int32_t il) const {
  return il + 1 < model_->config.n_layers ? weights_.layers[static_cast<size_t>(il) + 1].attn_norm.get()
                                          : weights_.output_norm.get();
}

GemvOutput CudaBackend::residual_output(const float* next_norm_w) const {
  GemvOutput o;
  o.kind = GemvOut::Residual;
  o.out = x_.get();
  o.out_stride = model_->config.n_embd;
  o.ss = ss_.get();
  o.ss_stride = ss_stride_;
  if (tuning_.norm_from_producer != 0) {
    o.xw_h = xw_.get();
    o.xw_h_stride = xw_stride_;
    o.xw_norm_w = next_norm_w;
  }
  return o;
}

// Launch parameters for matrices [first, last) of `call`, their outputs from column `col` on.
GemvParams CudaBackend::gemv_params(const GemvCall& call, int32_t n_rows, int first, int last, int32_t col) const {
  GemvParams p;
  p.mats.n_tiles = call.mats[first]->n_tiles;
  p.mats.record_bytes = call.mats[first]->record_bytes;
  p.mats.k_elems = static_cast<int32_t>(call.mats[first]->n_cols);
  p.in = call.in;
  p.out = call.out;
  p.n_seqs = n_rows;
  p.split.n_splits = call.split.n_splits;
  p.split.tiles_per_split = call.split.tiles_per_split;
  p.split.partials = partials_.get();
  p.split.split_stride = split_stride_;
  p.split.part_stride = call.part_stride;
  p.split.counters = gemv_counters_.get();
  for (int i = first; i < last; ++i) {
    const int k = p.mats.n_mats++;
    p.mats.w[k] = call.mats[i]->ptr();
    p.mats.n_rows[k] = static_cast<int32_t>(call.mats[i]->n_rows);
    p.mats.col_begin[k] = col;
    p.mats.bias[k] = call.bias[i];
    col += p.mats.n_rows[k];
  }
  if (p.split.n_splits > 1 && static_cast<size_t>(gemv_row_blocks(p.mats)) > gemv_counters_.size()) {
    throw CudaError("gemv: more row blocks than split counters");
  }
  p.x_budget_bytes = tuning_.gemv_x_budget_bytes;
  p.early_loads = tuning_.gemv_early_loads;
  p.spread_blocks = call.spread_min_rows > 0 && n_rows >= call.spread_min_rows ? 1 : 0;
  if (trace_) {
    int64_t size_bytes = 0;
    std::string types;  // the distinct types of [first, last), in order ("Q4_K+Q6_K" for a pair launch)
    for (int i = first; i < last; ++i) {
      size_bytes += static_cast<int64_t>(call.mats[i]->data.size_bytes());
      if (i > first && call.mats[i]->type == call.mats[i - 1]->type) continue;
      if (!types.empty()) types += '+';
      types += tensor_type_name(static_cast<uint32_t>(call.mats[i]->type));
    }
    p.trace = trace_slot(call.label, size_bytes, std::move(types));
  }
  return p;
}

// Consecutive matrices of one type share a launch; columns continue across launches. Where a
// run of one type is followed only by matrices of one other type (a q4_k_m layer's Q4_K q|k
// and Q6_K v), both go in one two-type launch if the pair is supported (launch_gemv_pair) and
// the tuning allows it for this many rows: the same bits, one launch fewer.
void CudaBackend::enqueue_gemv(const GemvCall& call, int32_t n_rows) {
  const int n_mats = std::min(call.n_mats, kGemvMaxMats);  // the array's size (lets the compiler see the bound)
  int n_a = 1;  // the first run of one type: [0, n_a)
  while (n_a < n_mats && call.mats[n_a]->type == call.mats[0]->type) ++n_a;
  int end_b = n_a;  // the second: [n_a, end_b)
  while (end_b < n_mats && call.mats[end_b]->type == call.mats[n_a]->type) ++end_b;
  if (n_a < n_mats && end_b == n_mats && n_rows <= tuning_.gemv_pair_max_rows &&
      gemv_pair_supported(call.mats[0]->type, call.mats[n_a]->type)) {
    GemvParams p = gemv_params(call, n_rows, 0, n_mats, 0);
    p.mats.n_mats_a = n_a;
    p.mats.record_bytes_b = call.mats[n_a]->record_bytes;
    launch_gemv_pair(call.mats[0]->type, call.mats[n_a]->type, p, stream_->get());
    return;
  }
  int32_t col = 0;
  for (int i = 0; i < n_mats;) {
    int end = i + 1;
    while (end < n_mats && call.mats[end]->type == call.mats[i]->type) ++end;
    const GemvParams p = gemv_params(call, n_rows, i, end, col);
    for (int k = 0; k < p.mats.n_mats; ++k) col += p.mats.n_rows[k];
    launch_gemv(call.mats[i]->type, p, stream_->get());
    i = end;
  }
}

void CudaBackend::enqueue_embed(int32_t n_rows) {
  const ModelConfig& c = model_->config;
  const DeviceMatrix& e = weights_.token_embd;
  EmbedParams p;
  p.table = e.ptr();
  p.n_tiles = e.n_tiles;
  p.record_bytes = e.record_bytes;
  p.n_cols = c.n_embd;
  p.tokens = reinterpret_cast<const int32_t*>(inputs_dev_.get() + inputs_.tokens);
  p.n_tokens = n_rows;
  p.out = x_.get();
  p.out_stride = c.n_embd;
  p.ss = ss_.get();
  p.ss_stride = ss_stride_;
  if (tuning_.norm_from_producer != 0) {
    p.xw_h = xw_.get();
    p.xw_h_stride = xw_stride_;
    p.norm_w = weights_.layers[0].attn_norm.get();
  }
  launch_embed_rows(e.type, p, stream_->get());
}

AttentionParams CudaBackend::attention_params(int32_t il, int32_t n_rows, int32_t grid_chunks) const {
  const ModelConfig& c = model_->config;
  const int64_t layer_kv = int64_t{kv_layout_.n_blocks} * c.n_kv_heads * kv_layout_.block_tokens * c.head_dim;
  const uint8_t* in = inputs_dev_.get();
  AttentionParams ap;
  ap.q = q_.get();
  ap.k_cache = kv_cache_.get() + 2 * il * layer_kv;
  ap.v_cache = ap.k_cache + layer_kv;
  ap.block_tables = reinterpret_cast<const int32_t*>(in + inputs_.tables);
  ap.max_blocks = max_blocks_;
  ap.block_tokens = kv_layout_.block_tokens;
  ap.seq_lens = reinterpret_cast<const int32_t*>(in + inputs_.seq_lens);
  ap.n_heads = c.n_heads;
  ap.n_kv_heads = c.n_kv_heads;
  ap.head_dim = c.head_dim;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  ap.max_chunks = max_chunks_;
  ap.grid_chunks = grid_chunks;
  ap.part_o = attn_o_.get();
  ap.part_ml = attn_ml_.get();
  ap.out = h_.get();
  ap.out_stride = h_stride_;
  ap.n_rows = n_rows;
  return ap;
}

// RoPE and cache write of the q|k|v rows in mm_out_ for the rows of `ap`; with a layer, its
// biases are added on the way (the GEMM route; the GEMV route added them already).
QkvRopeParams CudaBackend::qkv_rope_params(const AttentionParams& ap, const DeviceLayer* biases) const {
  const ModelConfig& c = model_->config;
  QkvRopeParams qr;
  qr.qkv = Partials{mm_out_.get(), 1, 0, mm_stride_, 0};
  if (biases) {
    qr.bq = biases->bq.get();
    qr.bk = biases->bk.get();
    qr.bv = biases->bv.get();
  }
  qr.positions = reinterpret_cast<const int32_t*>(inputs_dev_.get() + inputs_.positions);
  qr.block_tables = ap.block_tables;
  qr.max_blocks = max_blocks_;
  qr.block_tokens = kv_layout_.block_tokens;
  qr.k_cache = ap.k_cache;
  qr.v_cache = ap.v_cache;
  qr.q_out = q_.get();
  qr.n_heads = c.n_heads;
  qr.n_kv_heads = c.n_kv_heads;
  qr.head_dim = c.head_dim;
  qr.rope = rope_of(c);
  qr.n_rows = ap.n_rows;
  return qr;
}

// QKV rotation, cache write and attention from the q|k|v rows in mm_out_ into h_.
void CudaBackend::enqueue_attention_gemv(int32_t il, int32_t n_rows, int32_t grid_chunks, RowKind kind) {
  const ModelConfig& c = model_->config;
  const AttentionParams ap = attention_params(il, n_rows, grid_chunks);
  if (kind == RowKind::Decode) {
    DecodeAttentionParams d;
    d.attn = ap;
    d.qkv = mm_out_.get();
    d.qkv_stride = mm_stride_;
    d.rope = rope_of(c);
    d.counters = attn_counters_.get();
    d.rope_cs = rope_cs_.get();
    d.rope_cs_positions = context_tokens_;
    d.cluster_max_rows = tuning_.attn_cluster_max_rows;
    d.chunks_per_block = tuning_.attn_chunks_per_block;
    d.row_max_rows = tuning_.attn_row_max_rows;
    d.row_warps = tuning_.attn_row_warps;
    d.row_split_max_rows = tuning_.attn_row_split_max_rows;
    d.row_split_parts = tuning_.attn_row_split_parts;
    d.row_kv_phases = tuning_.attn_row_kv_phases;
    d.trace = trace_slot("attn", 0);
    launch_attention_decode(d, stream_->get());
    return;
  }
  launch_qkv_rope(qkv_rope_params(ap, nullptr), stream_->get());  // biases already added by the GEMV
  launch_attention(ap, stream_->get());
}

void CudaBackend::enqueue_layers_gemv(int32_t n_rows, int32_t grid_chunks, RowKind kind) {
  const ModelConfig& c = model_->config;
  const int32_t n_qkv = c.q_dim() + 2 * c.kv_dim();
  for (int32_t il = 0; il < c.n_layers; ++il) {
    const DeviceLayer& L = weights_.layers[static_cast<size_t>(il)];
    GemvCall qkv;
    qkv.mats[0] = &L.wq; qkv.mats[1] = &L.wk; qkv.mats[2] = &L.wv;
    qkv.bias[0] = L.bq.get(); qkv.bias[1] = L.bk.get(); qkv.bias[2] = L.bv.get();
    qkv.n_mats = 3;
    qkv.in = norm_input(L.attn_norm.get(), n_rows);
    qkv.out = sum_output(mm_out_.get(), mm_stride_);
    qkv.split = split_qkv_;
    qkv.part_stride = n_qkv;
    qkv.label = "qkv";
    qkv.spread_min_rows = tuning_.gemv_spread.qkv;
    enqueue_gemv(qkv, n_rows);
    enqueue_attention_gemv(il, n_rows, grid_chunks, kind);

    enqueue_residual_gemv(L.wo, h_.get(), L.ffn_norm.get(), split_o_, tuning_.gemv_spread.o, n_rows, "o");

    GemvCall ffn;
    ffn.in = norm_input(L.ffn_norm.get(), n_rows);
    ffn.split = split_ffn_up_;
    ffn.label = "ffn_up";
    ffn.spread_min_rows = tuning_.gemv_spread.ffn_up;
    if (L.ffn_fused()) {
      ffn.mats[0] = &L.w_gate_up;
      ffn.n_mats = 1;
      ffn.out.kind = GemvOut::SwiGlu;
      ffn.out.out_h = h_ff_.get();
      ffn.out.out_h_stride = h_stride_;
      ffn.out.n_ff = c.n_ff;
      ffn.part_stride = static_cast<int32_t>(L.w_gate_up.n_rows);
      enqueue_gemv(ffn, n_rows);
    } else {
      ffn.mats[0] = &L.w_gate;
      ffn.mats[1] = &L.w_up;
      ffn.n_mats = 2;
      ffn.out = sum_output(mm_out_.get(), mm_stride_);
      ffn.part_stride = 2 * c.n_ff;
      enqueue_gemv(ffn, n_rows);
      SwigluParams sw;
      sw.gate_up = Partials{mm_out_.get(), 1, 0, mm_stride_, 0};
      sw.out = h_ff_.get();
      sw.out_stride = h_stride_;
      sw.n_ff = c.n_ff;
      sw.n_rows = n_rows;
      launch_swiglu(sw, stream_->get());
    }

    enqueue_residual_gemv(L.w_down, h_ff_.get(), norm_after_layer(il), split_down_, tuning_.gemv_spread.down, n_rows,
                          "down");
  }
}

void CudaBackend::set_tuning(const CudaTuning& t) {
  apply_tuning(t);
  drop_graphs();  // routes, chunk sizes and split shapes are baked into the captured launches
}

// residual += m x for f16 rows x (the attention output or the SwiGLU output).
void CudaBackend::enqueue_residual_gemv(const DeviceMatrix& m, const __half* x, const float* next_norm_w,
                                        GemvSplitShape split, int32_t spread_min_rows, int32_t n_rows,
                                        const char* label) {
  GemvCall call;
  call.mats[0] = &m;
  call.n_mats = 1;
  call.in = half_input(x);
  call.out = residual_output(next_norm_w);
  call.split = split;
  call.part_stride = model_->config.n_embd;
  call.label = label;
  call.spread_min_rows = spread_min_rows;
  enqueue_gemv(call, n_rows);
}

// GEMM route: dequantize each matrix to f16 and multiply on the tensor cores through
// cuBLASLt; outputs side by side in mm_out_.
void CudaBackend::enqueue_matmul_gemm(const DeviceMatrix* const* mats, int n_mats, const __half* x, int32_t n_rows,
                                      int32_t out_stride) {
  cudaStream_t s = stream_->get();
  int32_t col = 0;
  for (int i = 0; i < n_mats; ++i) {
    const DeviceMatrix& m = *mats[i];
    launch_dequant_f16(m.type, m.ptr(), m.n_rows, m.n_tiles, m.record_bytes, w_f16_.get(), s);
    GemmShape shape{m.n_rows, int64_t{m.n_tiles} * kTileElems, n_rows, h_stride_, out_stride};
    gemm_->run(shape, w_f16_.get(), x, mm_out_.get() + col, s);
    col += static_cast<int32_t>(m.n_rows);
  }
}

// Attention of one prompt chunk's rows (their K/V already in the cache): the tiled prefill
// kernel, or the per-row kernel in slices where the head shape has no tiled kernel.
void CudaBackend::enqueue_attention_prompt(int32_t il, const PackedChunk& ch) {
  const ModelConfig& c = model_->config;
  cudaStream_t s = stream_->get();
  const auto slice = [&](int32_t r0, int32_t n_rows, int32_t grid_chunks) {
    AttentionParams p = attention_params(il, n_rows, grid_chunks);
    p.q += static_cast<int64_t>(r0) * c.q_dim();
    p.block_tables += static_cast<int64_t>(r0) * max_blocks_;
    p.seq_lens += r0;
    p.out += static_cast<int64_t>(r0) * h_stride_;
    return p;
  };
  if (attention_prefill_supported(c.head_dim)) {
    launch_attention_prefill(slice(ch.row0, ch.n_rows, 0), ch.first_pos, s);
    return;
  }
  const int32_t grid_chunks = (ch.first_pos + ch.n_rows + kAttnChunkTokens - 1) / kAttnChunkTokens;
  for (int32_t r0 = 0; r0 < ch.n_rows; r0 += kAttnMaxRowsPerLaunch) {
    launch_attention(slice(ch.row0 + r0, std::min(kAttnMaxRowsPerLaunch, ch.n_rows - r0), grid_chunks), s);
  }
}

void CudaBackend::enqueue_layers_gemm(int32_t n_rows, std::span<const PackedChunk> chunks) {
  const ModelConfig& c = model_->config;
  cudaStream_t s = stream_->get();
  ResidualNormParams rn;
  rn.x = x_.get();
  rn.eps = c.rms_eps;
  rn.out = h_.get();
  rn.out_stride = h_stride_;
  rn.ss = ss_.get();
  rn.ss_stride = ss_stride_;
  rn.n_embd = c.n_embd;
  rn.n_rows = n_rows;
  rn.norm_w = weights_.layers[0].attn_norm.get();
  launch_residual_norm(rn, s);  // the first layer's normalized input
  const Partials mm{mm_out_.get(), 1, 0, mm_stride_, 0};
  for (int32_t il = 0; il < c.n_layers; ++il) {
    const DeviceLayer& L = weights_.layers[static_cast<size_t>(il)];
    const AttentionParams ap = attention_params(il, n_rows, 0);  // all rows: for qkv_rope
    const DeviceMatrix* qkv[3] = {&L.wq, &L.wk, &L.wv};
    enqueue_matmul_gemm(qkv, 3, h_.get(), n_rows, mm_stride_);
    launch_qkv_rope(qkv_rope_params(ap, &L), s);
    for (const PackedChunk& ch : chunks) enqueue_attention_prompt(il, ch);

    const DeviceMatrix* wo[1] = {&L.wo};
    enqueue_matmul_gemm(wo, 1, h_.get(), n_rows, mm_stride_);
    rn.add = mm;
    rn.norm_w = L.ffn_norm.get();
    launch_residual_norm(rn, s);

    SwigluParams sw;
    sw.gate_up = mm;
    sw.out = h_ff_.get();
    sw.out_stride = h_stride_;
    sw.n_ff = c.n_ff;
    sw.n_rows = n_rows;
    if (L.ffn_fused()) {
      const DeviceMatrix* gu[1] = {&L.w_gate_up};
      enqueue_matmul_gemm(gu, 1, h_.get(), n_rows, mm_stride_);
      sw.layout = GateUpLayout::Interleaved16;
    } else {
      const DeviceMatrix* gu[2] = {&L.w_gate, &L.w_up};
      enqueue_matmul_gemm(gu, 2, h_.get(), n_rows, mm_stride_);
    }
    launch_swiglu(sw, s);

    const DeviceMatrix* down[1] = {&L.w_down};
    enqueue_matmul_gemm(down, 1, h_ff_.get(), n_rows, mm_stride_);
    rn.norm_w = norm_after_layer(il);
    if (il + 1 == c.n_layers && tuning_.norm_from_producer != 0) {  // the LM head's input (norm_input)
      rn.xw_h = xw_.get();
      rn.xw_h_stride = xw_stride_;
    }
    launch_residual_norm(rn, s);
  }
}

// Logits of rows [row_begin, row_begin + n_rows) of the residual stream (final RMSNorm fused
// in front) and each 64-row block's argmax per row for the greedy sampler.
void CudaBackend::enqueue_lm_head(int32_t row_begin, int32_t n_rows) {
  const DeviceMatrix& m = weights_.lm_head();
  GemvCall lm;
  lm.mats[0] = &m;
  lm.n_mats = 1;
  lm.in = norm_input(weights_.output_norm.get(), n_rows, row_begin);
  lm.out.kind = GemvOut::Logits;
  lm.out.out = logits_.get();
  lm.out.out_stride = static_cast<int32_t>(m.n_rows);
  lm.out.argmax_val = argmax_val_.get();
  lm.out.argmax_idx = argmax_idx_.get();
  lm.split = split_lm_;
  lm.part_stride = static_cast<int32_t>(m.n_rows);
  lm.label = "lm_head";
  enqueue_gemv(lm, n_rows);
}

void CudaBackend::enqueue_sample(int32_t n_rows) {
  SampleParams p;
  p.logits = logits_.get();
  p.logits_stride = model_->config.n_vocab;
  p.work = sample_work_.get();
  p.n_vocab = model_->config.n_vocab;
  p.params = reinterpret_cast<const DeviceSampling*>(inputs_dev_.get() + inputs_.sampling);
  p.history = reinterpret_cast<const int32_t*>(inputs_dev_.get() + inputs_.history);
  p.out_tokens = out_tokens_dev_.get();
  p.n_rows = n_rows;
  p.argmax_val = argmax_val_.get();
  p.argmax_idx = argmax_idx_.get();
  p.n_argmax_blocks = static_cast<int32_t>((weights_.lm_head().n_rows + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock);
  p.argmax_stride = kGemvMaxSeqs;
  launch_sample(p, stream_->get());
}

}  // namespace chorus::cuda
