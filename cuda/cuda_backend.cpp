#include "cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cuda/attention.h"
#include "cuda/gemv.h"
#include "cuda/layer_ops.h"
#include "cuda/weight_repack.h"

namespace chorus::cuda {
namespace {

constexpr int32_t kMib = 1 << 20;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
size_t align_up(size_t v) { return (v + 255) / 256 * 256; }

}  // namespace

StepInputsLayout StepInputsLayout::make(int32_t max_rows, int32_t max_blocks, int32_t max_sample_rows) {
  StepInputsLayout l;
  l.max_rows = max_rows;
  l.max_blocks = max_blocks;
  size_t off = 0;
  l.tokens = off; off = align_up(off + sizeof(int32_t) * max_rows);
  l.positions = off; off = align_up(off + sizeof(int32_t) * max_rows);
  l.seq_lens = off; off = align_up(off + sizeof(int32_t) * max_rows);
  l.sampling = off; off = align_up(off + sizeof(DeviceSampling) * max_sample_rows);
  l.history = off; off = align_up(off + sizeof(int32_t) * kSampleMaxHistory * max_sample_rows);
  l.tables = off; off = align_up(off + sizeof(int32_t) * static_cast<size_t>(max_rows) * max_blocks);
  l.total_bytes = off;
  return l;
}

CudaBackend::~CudaBackend() {
  if (stream_) cudaStreamSynchronize(stream_->get());
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(const std::string& model_path,
                                                         const CudaBackendOptions& opts) {
  std::unique_ptr<CudaBackend> b(new CudaBackend());
  try {
    b->init(model_path, opts);
  } catch (const CudaError& e) {
    return make_error(model_path + ": CUDA backend: " + e.what());
  }
  return b;
}

void CudaBackend::init(const std::string& model_path, const CudaBackendOptions& opts) {
  auto file = ModelFile::open(model_path);
  if (!file) throw CudaError(file.message());
  model_ = std::move(*file);
  const ModelConfig& c = model_->config;
  if (c.head_dim % 2 != 0 || c.head_dim > 256 || c.n_heads / c.n_kv_heads > 8) {
    throw CudaError("unsupported attention shape (head_dim " + std::to_string(c.head_dim) + ", " +
                    std::to_string(c.n_heads / c.n_kv_heads) + " query heads per kv head)");
  }
  int dev = 0;
  CHORUS_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CHORUS_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  device_name_ = prop.name;
  n_sms_ = prop.multiProcessorCount;
  prepare_gemv_kernels();  // before any capture: it changes kernel attributes
  prepare_attention_kernels();

  max_batch_ = std::clamp(opts.base.max_batch, 1, kGemvMaxSeqs);
  max_prefill_ = std::max(opts.max_prefill_tokens, max_batch_);
  context_tokens_ = std::max(16, opts.base.context_tokens);
  graph_mode_ = opts.graphs;
  kv_layout_.block_tokens = 16;
  max_blocks_ = static_cast<int32_t>(round_up(context_tokens_, kv_layout_.block_tokens) / kv_layout_.block_tokens);
  max_chunks_ = static_cast<int32_t>(round_up(context_tokens_, kAttnChunkTokens) / kAttnChunkTokens);
  max_rows_ = std::max(max_batch_, max_prefill_);

  // Memory check before any big allocation: weights + a minimal KV cache must fit.
  size_t free_b = 0, total_b = 0;
  CHORUS_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const int64_t weights_b = device_model_bytes(model_->weights);
  const int64_t kv_token_b = int64_t{2} * c.n_layers * c.kv_dim() * 2;
  const int64_t n_max = std::max<int64_t>({c.q_dim() + 2 * c.kv_dim(), c.n_embd, 2 * c.n_ff + 32});
  const int64_t buffers_b = int64_t{max_rows_} * (n_max * 4 + c.n_embd * 2 + c.q_dim() * 4 * (1 + max_chunks_)) +
                            int64_t{16} * max_batch_ * n_max * 4 + int64_t{4} * max_batch_ * c.n_vocab * 4 +
                            int64_t{2} * c.n_ff * c.n_embd * 2 +
                            rope_table_entries(rope_of(c), context_tokens_) * static_cast<int64_t>(sizeof(float2)) +
                            int64_t{256} * kMib;
  const int64_t min_kv_tokens = int64_t{context_tokens_};
  const int64_t needed = weights_b + buffers_b + min_kv_tokens * kv_token_b;
  if (needed > static_cast<int64_t>(free_b)) {
    throw CudaError("not enough GPU memory on " + device_name_ + ": needs " + std::to_string(needed / kMib) +
                    " MiB (weights " + std::to_string(weights_b / kMib) + " MiB, buffers " +
                    std::to_string(buffers_b / kMib) + " MiB, KV cache for " + std::to_string(min_kv_tokens) +
                    " tokens " + std::to_string(min_kv_tokens * kv_token_b / kMib) + " MiB), " +
                    std::to_string(free_b / kMib) + " MiB free of " + std::to_string(total_b / kMib) + " MiB");
  }
  int64_t kv_tokens = opts.base.kv_cache_tokens > 0 ? opts.base.kv_cache_tokens
                                                    : int64_t{max_batch_} * context_tokens_;
  const int64_t kv_room = (static_cast<int64_t>(free_b) - weights_b - buffers_b) * 9 / 10;
  kv_tokens = std::clamp<int64_t>(kv_tokens, min_kv_tokens, std::max<int64_t>(min_kv_tokens, kv_room / kv_token_b));

  stream_ = std::make_unique<Stream>();
  weights_ = upload_model(c, model_->weights);
  allocate_buffers(kv_tokens);

  apply_tuning(opts.tuning);
}

void CudaBackend::apply_tuning(const CudaTuning& t) {
  tuning_ = t;
  tuning_.attn_cluster_max_rows = std::max(0, t.attn_cluster_max_rows);
  tuning_.gemv_x_budget_bytes = std::max(0, t.gemv_x_budget_bytes);
  tuning_.attn_chunks_per_block = std::max(0, t.attn_chunks_per_block);
  tuning_.attn_row_max_rows = std::max(0, t.attn_row_max_rows);
  const CudaTuning::PerGemv& splits = t.gemv_splits;
  const ModelConfig& c = model_->config;
  const int32_t tiles_embd = static_cast<int32_t>(round_up(c.n_embd, kTileElems) / kTileElems);
  const int32_t tiles_q = static_cast<int32_t>(round_up(c.q_dim(), kTileElems) / kTileElems);
  const int32_t tiles_ff = static_cast<int32_t>(round_up(c.n_ff, kTileElems) / kTileElems);
  auto pick = [&](int32_t forced, int64_t total_rows, int32_t n_tiles) {
    return forced > 0 ? gemv_split_shape(forced, n_tiles) : gemv_choose_splits(total_rows, n_tiles, n_sms_);
  };
  split_qkv_ = pick(splits.qkv, c.q_dim() + 2 * c.kv_dim(), tiles_embd);
  split_o_ = pick(splits.o, c.n_embd, tiles_q);
  split_ffn_up_ = pick(splits.ffn_up, 2 * c.n_ff, tiles_embd);
  split_down_ = pick(splits.down, c.n_embd, tiles_ff);
  split_lm_ = GemvSplitShape{1, tiles_embd};
  tuning_.gemm_ref_rows = std::clamp(t.gemm_ref_rows, 0, max_prefill_);
  const int64_t ref_rows = tuning_.gemm_ref_rows > 0 ? tuning_.gemm_ref_rows : max_prefill_;
  if (!gemm_ || gemm_->reference_tokens() != ref_rows) {
    if (stream_) CHORUS_CUDA_CHECK(cudaStreamSynchronize(stream_->get()));  // its workspace may be in use
    gemm_ = std::make_unique<GemmLt>(max_prefill_, ref_rows);
  }
}

void CudaBackend::allocate_buffers(int64_t kv_tokens) {
  const ModelConfig& c = model_->config;
  kv_layout_.n_blocks = static_cast<int32_t>(kv_tokens / kv_layout_.block_tokens);
  const int64_t layer_elems = int64_t{kv_layout_.n_blocks} * c.n_kv_heads * kv_layout_.block_tokens * c.head_dim;
  kv_cache_ = DeviceBuffer<__half>(static_cast<size_t>(layer_elems * 2 * c.n_layers));
  x_ = DeviceBuffer<float>(static_cast<size_t>(max_rows_) * c.n_embd);
  ss_stride_ = (c.n_embd + kNormGroup - 1) / kNormGroup;
  ss_ = DeviceBuffer<float>(static_cast<size_t>(max_rows_) * ss_stride_);
  h_stride_ = static_cast<int32_t>(round_up(std::max({c.n_embd, c.q_dim(), c.n_ff}), kTileElems));
  h_ = DeviceBuffer<__half>(static_cast<size_t>(max_rows_) * h_stride_);
  h_ff_ = DeviceBuffer<__half>(static_cast<size_t>(max_rows_) * h_stride_);
  CHORUS_CUDA_CHECK(cudaMemset(h_.get(), 0, h_.size_bytes()));
  CHORUS_CUDA_CHECK(cudaMemset(h_ff_.get(), 0, h_ff_.size_bytes()));
  xw_stride_ = static_cast<int32_t>(round_up(c.n_embd, kTileElems));
  xw_ = DeviceBuffer<__half>(static_cast<size_t>(max_rows_) * xw_stride_);
  CHORUS_CUDA_CHECK(cudaMemset(xw_.get(), 0, xw_.size_bytes()));

  // Widest product: q|k|v, the (interleaved, padded) gate|up pair, or n_embd.
  int64_t ff_cols = 2 * c.n_ff, max_w = 0, max_row_blocks = 0;
  for (const DeviceLayer& l : weights_.layers) {
    if (l.ffn_fused()) ff_cols = std::max(ff_cols, l.w_gate_up.n_rows);
    for (const DeviceMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate_up, &l.w_gate, &l.w_up, &l.w_down}) {
      max_w = std::max<int64_t>(max_w, m->n_rows * m->n_tiles * kTileElems);
    }
    GemvMats qkv;
    qkv.n_mats = 3;
    qkv.n_rows[0] = static_cast<int32_t>(l.wq.n_rows);
    qkv.n_rows[1] = static_cast<int32_t>(l.wk.n_rows);
    qkv.n_rows[2] = static_cast<int32_t>(l.wv.n_rows);
    max_row_blocks = std::max<int64_t>(max_row_blocks, gemv_row_blocks(qkv));
  }
  max_row_blocks = std::max<int64_t>(
      {max_row_blocks, (ff_cols + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock, (c.n_embd + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock});
  mm_stride_ = static_cast<int32_t>(std::max<int64_t>({c.q_dim() + 2 * c.kv_dim(), c.n_embd, ff_cols}));
  mm_out_ = DeviceBuffer<float>(static_cast<size_t>(max_rows_) * mm_stride_);
  split_stride_ = int64_t{max_batch_} * mm_stride_;
  partials_ = DeviceBuffer<float>(static_cast<size_t>(16 * split_stride_));
  gemv_counters_ = DeviceBuffer<int32_t>(static_cast<size_t>(max_row_blocks));
  CHORUS_CUDA_CHECK(cudaMemset(gemv_counters_.get(), 0, gemv_counters_.size_bytes()));
  attn_counters_ = DeviceBuffer<int32_t>(static_cast<size_t>(kAttnMaxRowsPerLaunch) * c.n_kv_heads);
  CHORUS_CUDA_CHECK(cudaMemset(attn_counters_.get(), 0, attn_counters_.size_bytes()));
  const RopeSpec rope = rope_of(c);
  rope_cs_ = DeviceBuffer<float2>(static_cast<size_t>(rope_table_entries(rope, context_tokens_)));
  launch_rope_table(rope, context_tokens_, rope_cs_.get(), nullptr);
  CHORUS_CUDA_CHECK(cudaDeviceSynchronize());
  const int64_t lm_blocks = (weights_.lm_head().n_rows + kGemvRowsPerBlock - 1) / kGemvRowsPerBlock;
  argmax_val_ = DeviceBuffer<float>(static_cast<size_t>(lm_blocks * kGemvMaxSeqs));
  argmax_idx_ = DeviceBuffer<int32_t>(static_cast<size_t>(lm_blocks * kGemvMaxSeqs));

  q_ = DeviceBuffer<float>(static_cast<size_t>(max_rows_) * c.q_dim());
  attn_o_ = DeviceBuffer<float>(static_cast<size_t>(std::min(max_rows_, kAttnMaxRowsPerLaunch)) * c.n_heads * max_chunks_ * c.head_dim);
  attn_ml_ = DeviceBuffer<float>(static_cast<size_t>(std::min(max_rows_, kAttnMaxRowsPerLaunch)) * c.n_heads * max_chunks_ * 2);
  logits_ = DeviceBuffer<float>(static_cast<size_t>(max_batch_) * c.n_vocab);
  sample_work_ = DeviceBuffer<float>(static_cast<size_t>(max_batch_) * c.n_vocab);
  w_f16_ = DeviceBuffer<__half>(static_cast<size_t>(max_w));
  inputs_ = StepInputsLayout::make(max_rows_, max_blocks_, max_batch_);
  inputs_dev_ = DeviceBuffer<uint8_t>(inputs_.total_bytes);
  inputs_host_ = PinnedBuffer<uint8_t>(inputs_.total_bytes);
  std::memset(inputs_host_.get(), 0, inputs_.total_bytes);
  out_tokens_dev_ = DeviceBuffer<int32_t>(static_cast<size_t>(max_batch_));
  out_tokens_host_ = PinnedBuffer<int32_t>(static_cast<size_t>(max_batch_));
  logits_host_ = PinnedBuffer<float>(static_cast<size_t>(max_batch_) * c.n_vocab);
  drop_graphs();  // any graph captured before refers to freed buffers
}

void CudaBackend::drop_graphs() {
  ++buffers_generation_;
  graphs_.clear();
  eager_keys_.clear();
}

BackendMemory CudaBackend::memory() const {
  BackendMemory m;
  m.weights_bytes = weights_.bytes;
  m.kv_cache_bytes = static_cast<int64_t>(kv_cache_.size_bytes());
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    m.device_total_bytes = static_cast<int64_t>(total_b);
    m.device_free_bytes = static_cast<int64_t>(free_b);
  }
  return m;
}

}  // namespace chorus::cuda
