// The step entry points of CudaBackend: per-step inputs, the decode graph per batch shape
// (capture, replay, eager fallback), prefill chunks.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cuda/cuda_backend.h"

namespace chorus::cuda {
namespace {

// Spans of a traced step: ~5 launches a layer, and a few per step.
constexpr int32_t kMaxTracedLaunches = 1024;

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

void CudaBackend::enqueue_decode(int32_t n_rows, int32_t grid_chunks) {
  if (trace_) trace_->begin_enqueue();
  enqueue_embed(n_rows);
  enqueue_layers_gemv(n_rows, grid_chunks, RowKind::Decode);
  enqueue_lm_head(0, n_rows);
  enqueue_sample(n_rows);
  if (trace_) trace_->end_enqueue();
}

Status CudaBackend::set_step_trace(bool on) {
  if (on && !kStepTraceBuilt) {
    return make_error("this build has no step trace: configure with -DCHORUS_CUDA_STEP_TRACE=ON");
  }
  // A step in flight may still stamp the old spans.
  CHORUS_CUDA_CHECK(cudaStreamSynchronize(stream_->get()));
  trace_ = on ? std::make_unique<StepTrace>(kMaxTracedLaunches) : nullptr;
  drop_graphs();  // the spans' addresses are baked into captured launches
  return Ok{};
}

std::vector<TraceRecord> CudaBackend::read_step_trace() {
  return trace_ ? trace_->read(stream_->get()) : std::vector<TraceRecord>{};
}

void CudaBackend::run_decode_graph(int32_t n_rows, int32_t grid_chunks) {
  cudaStream_t s = stream_->get();
  if (trace_) trace_->arm(s);  // every span, before this step's launches (captured or not) run
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

Status CudaBackend::check_sampled(std::span<const int32_t> tokens, const char* what) const {
  for (int32_t t : tokens) {
    if (t < 0 || t >= model_->config.n_vocab) {
      return make_error(std::string(what) +
                        ": the model's output is not finite numbers, so no token could be sampled; the model "
                        "file may be damaged (check its download)");
    }
  }
  return Ok{};
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
  CHORUS_TRY(check_token_ids(batch.tokens, model_->config.n_vocab));  // before any device work
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
    CHORUS_TRY(check_sampled(r.tokens, "decode"));
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
  auto r = prefill_batch(std::span<const PrefillChunk>(&chunk, 1));
  if (!r.ok()) return r.error();
  return std::move(r->front());
}

// Chunks go to passes by their own length only (so a chunk's route, and its bits, never
// depend on what it is packed with): all the long ones in one GEMM pass, the short ones in
// GEMV passes of up to kGemvMaxSeqs rows, in the order given.
Result<std::vector<PrefillResult>> CudaBackend::prefill_batch(std::span<const PrefillChunk> chunks) {
  const int32_t n_chunks = static_cast<int32_t>(chunks.size());
  if (n_chunks < 1 || n_chunks > max_batch_) {
    return make_error("prefill: " + std::to_string(n_chunks) + " chunks; this backend takes 1.." +
                      std::to_string(max_batch_) + " in one call");
  }
  int64_t n_total = 0;
  for (const PrefillChunk& c : chunks) {
    const int32_t n = static_cast<int32_t>(c.tokens.size());
    if (n < 1 || n > max_prefill_) {
      return make_error("prefill: chunk of " + std::to_string(n) + " tokens for sequence " +
                        std::to_string(c.seq.seq_id) + "; this backend takes 1.." + std::to_string(max_prefill_));
    }
    CHORUS_TRY(check_seq(c.seq, n));
    CHORUS_TRY(check_token_ids(c.tokens, model_->config.n_vocab));
    n_total += n;
  }
  if (n_total > max_prefill_) {
    return make_error("prefill: " + std::to_string(n_total) + " tokens in one call; this backend takes at most " +
                      std::to_string(max_prefill_));
  }
  std::vector<PrefillResult> results(chunks.size());
  std::vector<const PrefillChunk*> long_chunks, pass;
  std::vector<PrefillResult*> long_out, pass_out;
  try {
    int32_t pass_rows = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const int32_t n = static_cast<int32_t>(chunks[i].tokens.size());
      if (n > kGemvMaxSeqs) {
        long_chunks.push_back(&chunks[i]);
        long_out.push_back(&results[i]);
        continue;
      }
      if (pass_rows + n > kGemvMaxSeqs) {
        run_prefill_pass(pass, pass_out);
        pass.clear();
        pass_out.clear();
        pass_rows = 0;
      }
      pass.push_back(&chunks[i]);
      pass_out.push_back(&results[i]);
      pass_rows += n;
    }
    if (!pass.empty()) run_prefill_pass(pass, pass_out);
    if (!long_chunks.empty()) run_prefill_pass(long_chunks, long_out);
  } catch (const CudaError& e) {
    return make_error(std::string("CUDA prefill: ") + e.what());
  }
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i].output == PrefillChunk::Output::SampleLast) {
      CHORUS_TRY(check_sampled(std::span<const int32_t>(&results[i].sampled_token, 1), "prefill"));
    }
  }
  return results;
}

void CudaBackend::run_prefill_pass(std::span<const PrefillChunk* const> chunks, std::span<PrefillResult* const> out) {
  std::vector<PackedChunk> packed;
  std::vector<int32_t> sample_rows;  // the last row of each chunk that samples, in order
  int32_t n = 0, grid_chunks = 1;
  for (const PrefillChunk* c : chunks) {
    const int32_t len = static_cast<int32_t>(c->tokens.size());
    packed.push_back({n, len, c->seq.n_past});
    for (int32_t i = 0; i < len; ++i) {
      fill_row(inputs_host_.get(), inputs_, n + i, c->tokens[static_cast<size_t>(i)], c->seq.n_past + i,
               c->seq.block_table);
    }
    if (c->output == PrefillChunk::Output::SampleLast) {
      fill_sampling(static_cast<int32_t>(sample_rows.size()), c->seq);
      sample_rows.push_back(n + len - 1);
    }
    grid_chunks = std::max(grid_chunks, chunks_for(c->seq.n_past + len));
    n += len;
  }
  cudaStream_t s = stream_->get();
  const size_t bytes = inputs_.tables + sizeof(int32_t) * static_cast<size_t>(n) * max_blocks_;
  CHORUS_CUDA_CHECK(cudaMemcpyAsync(inputs_dev_.get(), inputs_host_.get(), bytes, cudaMemcpyHostToDevice, s));
  enqueue_embed(n);
  if (n <= kGemvMaxSeqs) {
    enqueue_layers_gemv(n, grid_chunks, RowKind::Prompt);
  } else {
    enqueue_layers_gemm(n, packed);
  }
  const int32_t n_vocab = model_->config.n_vocab;
  for (size_t k = 0; k < chunks.size(); ++k) {
    if (chunks[k]->logits != LogitsMode::Return) continue;
    std::vector<float>& logits = out[k]->logits;
    logits.resize(static_cast<size_t>(packed[k].n_rows) * n_vocab);
    for (int32_t r0 = 0; r0 < packed[k].n_rows; r0 += max_batch_) {
      const int32_t rows = std::min(max_batch_, packed[k].n_rows - r0);
      enqueue_lm_head(packed[k].row0 + r0, rows);
      CHORUS_CUDA_CHECK(cudaMemcpyAsync(logits.data() + static_cast<size_t>(r0) * n_vocab, logits_.get(),
                                        sizeof(float) * rows * n_vocab, cudaMemcpyDeviceToHost, s));
      CHORUS_CUDA_CHECK(cudaStreamSynchronize(s));
    }
  }
  const int32_t n_sample = static_cast<int32_t>(sample_rows.size());
  if (n_sample > 0) {
    gather_rows(sample_rows);
    enqueue_lm_head(0, n_sample);
    enqueue_sample(n_sample);
    CHORUS_CUDA_CHECK(cudaMemcpyAsync(out_tokens_host_.get(), out_tokens_dev_.get(), sizeof(int32_t) * n_sample,
                                      cudaMemcpyDeviceToHost, s));
  }
  CHORUS_CUDA_CHECK(cudaStreamSynchronize(s));
  for (size_t k = 0, j = 0; k < chunks.size(); ++k) {
    if (chunks[k]->output == PrefillChunk::Output::SampleLast) out[k]->sampled_token = out_tokens_host_[j++];
  }
}

void CudaBackend::gather_rows(std::span<const int32_t> rows) {
  const int32_t n_embd = model_->config.n_embd;
  cudaStream_t s = stream_->get();
  for (size_t i = 0; i < rows.size(); ++i) {
    const int32_t from = rows[i], to = static_cast<int32_t>(i);
    if (from == to) continue;
    CHORUS_CUDA_CHECK(cudaMemcpyAsync(x_.get() + static_cast<int64_t>(to) * n_embd,
                                      x_.get() + static_cast<int64_t>(from) * n_embd, sizeof(float) * n_embd,
                                      cudaMemcpyDeviceToDevice, s));
    CHORUS_CUDA_CHECK(cudaMemcpyAsync(ss_.get() + static_cast<int64_t>(to) * ss_stride_,
                                      ss_.get() + static_cast<int64_t>(from) * ss_stride_,
                                      sizeof(float) * ss_stride_, cudaMemcpyDeviceToDevice, s));
    if (tuning_.norm_from_producer != 0) {
      CHORUS_CUDA_CHECK(cudaMemcpyAsync(xw_.get() + static_cast<int64_t>(to) * xw_stride_,
                                        xw_.get() + static_cast<int64_t>(from) * xw_stride_,
                                        sizeof(__half) * xw_stride_, cudaMemcpyDeviceToDevice, s));
    }
  }
}

}  // namespace chorus::cuda
