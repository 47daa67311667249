// The forward pass of CudaBackend: what one step enqueues, graph capture and replay, and the
// prefill / decode entry points.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cuda/attention.h"
#include "cuda/cuda_backend.h"
#include "cuda/gemv.h"
#include "cuda/layer_ops.h"
#include "cuda/weight_repack.h"

namespace chorus::cuda {
namespace {

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int32_t chunks_for(int32_t len) { return (len + kAttnChunkTokens - 1) / kAttnChunkTokens; }

int32_t chunk_bucket(int32_t needed, int32_t max_chunks) {
  int32_t b = 1;
  while (b < needed) b *= 2;
  return std::min(b, max_chunks);
}

}  // namespace

// GEMV route (<= 32 rows): consecutive matrices of one type share a launch. GEMM route:
// dequantize each matrix to f16 and multiply on the tensor cores through cuBLASLt (one f32
// output, no splits).
void CudaBackend::enqueue_matmul(const DeviceMatrix* const* mats, int n_mats, const __half* x, int32_t n_rows,
                                 int32_t n_splits, int32_t out_stride) {
  cudaStream_t s = stream_->get();
  int32_t col = 0;
  if (n_rows <= kGemvMaxSeqs) {
    for (int i = 0; i < n_mats;) {
      GemvParams p;
      p.n_tiles = mats[i]->n_tiles;
      p.record_bytes = mats[i]->record_bytes;
      p.k_elems = static_cast<int32_t>(mats[i]->n_cols);
      p.x = x;
      p.x_stride = h_stride_;
      p.n_seqs = n_rows;
      p.out = partials_.get();
      p.out_stride = out_stride;
      p.split_stride = split_stride_;
      p.n_splits = n_splits;
      p.tiles_per_split = (p.n_tiles + n_splits - 1) / n_splits;
      const TensorType type = mats[i]->type;
      while (i < n_mats && mats[i]->type == type && p.n_mats < kGemvMaxMats) {
        p.w[p.n_mats] = mats[i]->ptr();
        p.n_rows[p.n_mats] = static_cast<int32_t>(mats[i]->n_rows);
        p.col_begin[p.n_mats] = col;
        col += static_cast<int32_t>(mats[i]->n_rows);
        ++p.n_mats;
        ++i;
      }
      launch_gemv(type, p, s);
    }
    return;
  }
  for (int i = 0; i < n_mats; ++i) {
    const DeviceMatrix& m = *mats[i];
    launch_dequant_f16(m.type, m.ptr(), m.n_rows, m.n_tiles, m.record_bytes, w_f16_.get(), s);
    GemmShape shape{m.n_rows, int64_t{m.n_tiles} * kTileElems, n_rows, h_stride_, out_stride};
    gemm_->run(shape, w_f16_.get(), x, partials_.get() + col, s);
    col += static_cast<int32_t>(m.n_rows);
  }
}

void CudaBackend::enqueue_embed(int32_t n_rows) {
  const ModelConfig& c = model_->config;
  const DeviceMatrix& e = weights_.token_embd;
  const int32_t* tokens = reinterpret_cast<const int32_t*>(inputs_dev_.get() + inputs_.tokens);
  launch_embed_rows(e.type, e.ptr(), e.n_tiles, e.record_bytes, c.n_embd, tokens, n_rows, x_.get(), c.n_embd,
                    stream_->get());
  ResidualNormParams rn;
  rn.x = x_.get();
  rn.norm_w = weights_.layers[0].attn_norm.get();
  rn.eps = c.rms_eps;
  rn.out = h_.get();
  rn.out_stride = h_stride_;
  rn.n_embd = c.n_embd;
  rn.n_rows = n_rows;
  launch_residual_norm(rn, stream_->get());
}

void CudaBackend::enqueue_layers(int32_t n_rows, int32_t grid_chunks, int32_t prefill_first_pos) {
  const ModelConfig& c = model_->config;
  cudaStream_t s = stream_->get();
  const bool gemv = n_rows <= kGemvMaxSeqs;
  auto splits = [&](int32_t n) { return gemv ? n : 1; };
  const int32_t n_qkv = c.q_dim() + 2 * c.kv_dim();
  const uint8_t* in = inputs_dev_.get();
  const int64_t layer_kv = int64_t{kv_layout_.n_blocks} * c.n_kv_heads * kv_layout_.block_tokens * c.head_dim;

  for (int32_t il = 0; il < c.n_layers; ++il) {
    const DeviceLayer& L = weights_.layers[static_cast<size_t>(il)];
    __half* k_cache = kv_cache_.get() + 2 * il * layer_kv;
    __half* v_cache = k_cache + layer_kv;

    const DeviceMatrix* qkv[3] = {&L.wq, &L.wk, &L.wv};
    enqueue_matmul(qkv, 3, h_.get(), n_rows, splits(splits_qkv_), n_qkv);
    QkvRopeParams qr;
    qr.qkv = Partials{partials_.get(), splits(splits_qkv_), split_stride_, n_qkv, 0};
    qr.bq = L.bq.get();
    qr.bk = L.bk.get();
    qr.bv = L.bv.get();
    qr.positions = reinterpret_cast<const int32_t*>(in + inputs_.positions);
    qr.block_tables = reinterpret_cast<const int32_t*>(in + inputs_.tables);
    qr.max_blocks = max_blocks_;
    qr.block_tokens = kv_layout_.block_tokens;
    qr.k_cache = k_cache;
    qr.v_cache = v_cache;
    qr.q_out = q_.get();
    qr.n_heads = c.n_heads;
    qr.n_kv_heads = c.n_kv_heads;
    qr.head_dim = c.head_dim;
    qr.rope_dim = c.rope_dim;
    qr.rope = c.rope_style == RopeStyle::Neox ? RopeKind::Neox : RopeKind::Normal;
    qr.rope_base = c.rope_base;
    qr.n_rows = n_rows;
    launch_qkv_rope(qr, s);

    AttentionParams ap;
    ap.q = q_.get();
    ap.k_cache = k_cache;
    ap.v_cache = v_cache;
    ap.block_tables = qr.block_tables;
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
    // A prompt chunk of one sequence goes through the tiled prefill kernel; decode rows (and
    // head sizes it does not take) through the paged decode kernel, one row per token.
    if (!gemv && prefill_first_pos >= 0 && attention_prefill_supported(c.head_dim)) {
      ap.n_rows = n_rows;
      launch_attention_prefill(ap, prefill_first_pos, s);
    } else {
      for (int32_t r0 = 0; r0 < n_rows; r0 += kAttnMaxRowsPerLaunch) {
        AttentionParams slice = ap;
        slice.q = ap.q + static_cast<int64_t>(r0) * c.q_dim();
        slice.block_tables = ap.block_tables + static_cast<int64_t>(r0) * max_blocks_;
        slice.seq_lens = ap.seq_lens + r0;
        slice.out = ap.out + static_cast<int64_t>(r0) * h_stride_;
        slice.n_rows = std::min(kAttnMaxRowsPerLaunch, n_rows - r0);
        launch_attention(slice, s);
      }
    }

    const DeviceMatrix* wo[1] = {&L.wo};
    enqueue_matmul(wo, 1, h_.get(), n_rows, splits(splits_o_), c.n_embd);
    ResidualNormParams rn;
    rn.x = x_.get();
    rn.add = Partials{partials_.get(), splits(splits_o_), split_stride_, c.n_embd, 0};
    rn.norm_w = L.ffn_norm.get();
    rn.eps = c.rms_eps;
    rn.out = h_.get();
    rn.out_stride = h_stride_;
    rn.n_embd = c.n_embd;
    rn.n_rows = n_rows;
    launch_residual_norm(rn, s);

    const DeviceMatrix* gu[2] = {&L.w_gate, &L.w_up};
    enqueue_matmul(gu, 2, h_.get(), n_rows, splits(splits_ffn_up_), 2 * c.n_ff);
    SwigluParams sw;
    sw.gate_up = Partials{partials_.get(), splits(splits_ffn_up_), split_stride_, 2 * c.n_ff, 0};
    sw.out = h_ff_.get();
    sw.out_stride = h_stride_;
    sw.n_ff = c.n_ff;
    sw.n_rows = n_rows;
    launch_swiglu(sw, s);

    const DeviceMatrix* down[1] = {&L.w_down};
    enqueue_matmul(down, 1, h_ff_.get(), n_rows, splits(splits_down_), c.n_embd);
    rn.add = Partials{partials_.get(), splits(splits_down_), split_stride_, c.n_embd, 0};
    rn.norm_w = il + 1 < c.n_layers ? weights_.layers[static_cast<size_t>(il) + 1].attn_norm.get()
                                    : weights_.output_norm.get();
    launch_residual_norm(rn, s);
  }
}

void CudaBackend::enqueue_lm_head(int32_t row_begin, int32_t n_rows) {
  const DeviceMatrix& m = weights_.lm_head();
  GemvParams p;
  p.w[0] = m.ptr();
  p.n_rows[0] = static_cast<int32_t>(m.n_rows);
  p.n_mats = 1;
  p.n_tiles = m.n_tiles;
  p.record_bytes = m.record_bytes;
  p.k_elems = static_cast<int32_t>(m.n_cols);
  p.x = h_.get() + static_cast<int64_t>(row_begin) * h_stride_;
  p.x_stride = h_stride_;
  p.n_seqs = n_rows;
  p.out = logits_.get();
  p.out_stride = static_cast<int32_t>(m.n_rows);
  p.n_splits = 1;
  p.tiles_per_split = m.n_tiles;
  launch_gemv(m.type, p, stream_->get());
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
  launch_sample(p, stream_->get());
}

void CudaBackend::enqueue_decode(int32_t n_rows, int32_t grid_chunks) {
  enqueue_embed(n_rows);
  enqueue_layers(n_rows, grid_chunks);
  enqueue_lm_head(0, n_rows);
  enqueue_sample(n_rows);
}

void CudaBackend::run_decode_graph(int32_t n_rows, int32_t grid_chunks) {
  cudaStream_t s = stream_->get();
  const GraphKey key{n_rows, grid_chunks, buffers_generation_};
  if (graph_mode_ == GraphMode::Eager || eager_keys_.count(key)) {
    enqueue_decode(n_rows, grid_chunks);
    ++counters_.eager_steps;
    return;
  }
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    std::string failure;
    cudaGraph_t graph = nullptr;
    CHORUS_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue_decode(n_rows, grid_chunks);
    } catch (const CudaError& e) {
      failure = e.what();
    }
    const cudaError_t end = cudaStreamEndCapture(s, &graph);  // always ends the capture
    if (failure.empty() && end != cudaSuccess) failure = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(end);
    cudaGraphExec_t exec = nullptr;
    if (failure.empty()) {
      const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
      if (inst != cudaSuccess) failure = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(inst);
    }
    if (graph) cudaGraphDestroy(graph);
    if (!failure.empty()) {
      (void)cudaGetLastError();  // clear the sticky launch error of the failed capture
      std::fprintf(stderr, "chorus cuda: graph capture for M=%d, %d attention chunks failed (%s); running eager\n",
                   n_rows, grid_chunks, failure.c_str());
      eager_keys_.insert(key);
      enqueue_decode(n_rows, grid_chunks);
      ++counters_.eager_steps;
      return;
    }
    it = graphs_.emplace(key, GraphExec(exec)).first;
    ++counters_.graph_captures;
  }
  CHORUS_CUDA_CHECK(cudaGraphLaunch(it->second.get(), s));
  ++counters_.graph_replays;
}

Status CudaBackend::check_seq(const SeqState& s, int32_t n_new) const {
  const int64_t end = int64_t{s.n_past} + n_new;
  if (s.n_past < 0 || end > context_tokens_) {
    return make_error("sequence " + std::to_string(s.seq_id) + " would reach " + std::to_string(end) +
                      " tokens, over the context limit of " + std::to_string(context_tokens_));
  }
  const int64_t blocks_needed = (end + kv_layout_.block_tokens - 1) / kv_layout_.block_tokens;
  if (static_cast<int64_t>(s.block_table.size()) < blocks_needed) {
    return make_error("sequence " + std::to_string(s.seq_id) + ": block table has " +
                      std::to_string(s.block_table.size()) + " blocks, " + std::to_string(blocks_needed) + " needed");
  }
  for (int64_t i = 0; i < blocks_needed; ++i) {
    const int32_t b = s.block_table[static_cast<size_t>(i)];
    if (b < 0 || b >= kv_layout_.n_blocks) {
      return make_error("sequence " + std::to_string(s.seq_id) + ": KV block id " + std::to_string(b) +
                        " outside the cache of " + std::to_string(kv_layout_.n_blocks) + " blocks");
    }
  }
  return Ok{};
}

void CudaBackend::fill_sampling(int32_t row, const SeqState& s) {
  DeviceSampling* ds = reinterpret_cast<DeviceSampling*>(inputs_host_.get() + inputs_.sampling) + row;
  const SamplingParams& sp = s.sampling;
  ds->temperature = sp.temperature;
  ds->top_k = sp.top_k;
  ds->top_p = sp.top_p;
  ds->min_p = sp.min_p;
  ds->repeat_penalty = sp.repeat_penalty;
  ds->presence_penalty = sp.presence_penalty;
  ds->frequency_penalty = sp.frequency_penalty;
  ds->seed = sp.seed;
  ds->draw_index = s.sample_index;
  size_t n = s.history.size();
  if (sp.penalty_last_n >= 0) n = std::min(n, static_cast<size_t>(sp.penalty_last_n));
  n = std::min(n, static_cast<size_t>(kSampleMaxHistory));
  if (!sp.has_penalties()) n = 0;
  ds->n_history = static_cast<int32_t>(n);
  int32_t* hist = reinterpret_cast<int32_t*>(inputs_host_.get() + inputs_.history) + row * kSampleMaxHistory;
  std::copy(s.history.end() - static_cast<std::ptrdiff_t>(n), s.history.end(), hist);
}

namespace {
void fill_row(uint8_t* host, const StepInputsLayout& l, int32_t row, int32_t token, int32_t pos,
              std::span<const int32_t> table) {
  reinterpret_cast<int32_t*>(host + l.tokens)[row] = token;
  reinterpret_cast<int32_t*>(host + l.positions)[row] = pos;
  reinterpret_cast<int32_t*>(host + l.seq_lens)[row] = pos + 1;
  int32_t* t = reinterpret_cast<int32_t*>(host + l.tables) + static_cast<int64_t>(row) * l.max_blocks;
  const size_t n = std::min(table.size(), static_cast<size_t>(l.max_blocks));
  std::copy(table.begin(), table.begin() + static_cast<std::ptrdiff_t>(n), t);
}
}  // namespace

Result<DecodeResult> CudaBackend::decode(const DecodeBatch& batch) {
  const int32_t m = static_cast<int32_t>(batch.seqs.size());
  if (m < 1 || m > max_batch_ || batch.tokens.size() != batch.seqs.size()) {
    return make_error("decode: batch of " + std::to_string(m) + " sequences (" + std::to_string(batch.tokens.size()) +
                      " tokens); this backend takes 1.." + std::to_string(max_batch_));
  }
  DecodeResult r;
  try {
    const int64_t t0 = now_us();
    int32_t max_len = 1;
    for (int32_t i = 0; i < m; ++i) {
      const SeqState& s = batch.seqs[static_cast<size_t>(i)];
      CHORUS_TRY(check_seq(s, 1));
      fill_row(inputs_host_.get(), inputs_, i, batch.tokens[static_cast<size_t>(i)], s.n_past, s.block_table);
      fill_sampling(i, s);
      max_len = std::max(max_len, s.n_past + 1);
    }
    cudaStream_t s = stream_->get();
    const size_t bytes = inputs_.tables + sizeof(int32_t) * static_cast<size_t>(m) * max_blocks_;
    CHORUS_CUDA_CHECK(cudaMemcpyAsync(inputs_dev_.get(), inputs_host_.get(), bytes, cudaMemcpyHostToDevice, s));
    const int64_t t1 = now_us();
    run_decode_graph(m, chunk_bucket(chunks_for(max_len), max_chunks_));
    CHORUS_CUDA_CHECK(cudaMemcpyAsync(out_tokens_host_.get(), out_tokens_dev_.get(), sizeof(int32_t) * m,
                                      cudaMemcpyDeviceToHost, s));
    const int32_t n_vocab = model_->config.n_vocab;
    if (batch.logits == LogitsMode::Return) {
      CHORUS_CUDA_CHECK(cudaMemcpyAsync(logits_host_.get(), logits_.get(), sizeof(float) * m * n_vocab,
                                        cudaMemcpyDeviceToHost, s));
    }
    CHORUS_CUDA_CHECK(cudaStreamSynchronize(s));
    const int64_t t2 = now_us();
    r.tokens.assign(out_tokens_host_.get(), out_tokens_host_.get() + m);
    if (batch.logits == LogitsMode::Return) {
      r.logits.assign(logits_host_.get(), logits_host_.get() + static_cast<size_t>(m) * n_vocab);
    }
    r.times.t_upload_us = t1 - t0;
    r.times.t_forward_us = t2 - t1;
    r.times.t_download_us = now_us() - t2;
  } catch (const CudaError& e) {
    return make_error(std::string("CUDA decode step: ") + e.what());
  }
  return r;
}

Result<PrefillResult> CudaBackend::prefill(const PrefillChunk& chunk) {
  const int32_t n = static_cast<int32_t>(chunk.tokens.size());
  if (n < 1 || n > max_prefill_) {
    return make_error("prefill: chunk of " + std::to_string(n) + " tokens; this backend takes 1.." +
                      std::to_string(max_prefill_));
  }
  CHORUS_TRY(check_seq(chunk.seq, n));
  PrefillResult r;
  try {
    for (int32_t i = 0; i < n; ++i) {
      fill_row(inputs_host_.get(), inputs_, i, chunk.tokens[static_cast<size_t>(i)], chunk.seq.n_past + i,
               chunk.seq.block_table);
    }
    fill_sampling(0, chunk.seq);
    cudaStream_t s = stream_->get();
    const size_t bytes = inputs_.tables + sizeof(int32_t) * static_cast<size_t>(n) * max_blocks_;
    CHORUS_CUDA_CHECK(cudaMemcpyAsync(inputs_dev_.get(), inputs_host_.get(), bytes, cudaMemcpyHostToDevice, s));
    enqueue_embed(n);
    enqueue_layers(n, chunks_for(chunk.seq.n_past + n), chunk.seq.n_past);
    const int32_t n_vocab = model_->config.n_vocab;
    if (chunk.logits == LogitsMode::Return) {
      r.logits.resize(static_cast<size_t>(n) * n_vocab);
      for (int32_t r0 = 0; r0 < n; r0 += max_batch_) {
        const int32_t rows = std::min(max_batch_, n - r0);
        enqueue_lm_head(r0, rows);
        CHORUS_CUDA_CHECK(cudaMemcpyAsync(r.logits.data() + static_cast<size_t>(r0) * n_vocab, logits_.get(),
                                          sizeof(float) * rows * n_vocab, cudaMemcpyDeviceToHost, s));
        CHORUS_CUDA_CHECK(cudaStreamSynchronize(s));
      }
    }
    if (chunk.output == PrefillChunk::Output::SampleLast) {
      enqueue_lm_head(n - 1, 1);
      enqueue_sample(1);
      CHORUS_CUDA_CHECK(cudaMemcpyAsync(out_tokens_host_.get(), out_tokens_dev_.get(), sizeof(int32_t),
                                        cudaMemcpyDeviceToHost, s));
    }
    CHORUS_CUDA_CHECK(cudaStreamSynchronize(s));
    if (chunk.output == PrefillChunk::Output::SampleLast) r.sampled_token = out_tokens_host_[0];
  } catch (const CudaError& e) {
    return make_error(std::string("CUDA prefill: ") + e.what());
  }
  return r;
}

}  // namespace chorus::cuda
