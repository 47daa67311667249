#pragma once
// chorus::Backend on one NVIDIA GPU. A decode step for M sequences is one CUDA graph per
// (M, attention chunk bucket), replayed every step; its per-step inputs are copied from
// pinned host memory on the same stream just before the launch.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>

#include "cuda/device_memory.h"
#include "cuda/device_model.h"
#include "cuda/attention.h"
#include "cuda/cuda_tuning.h"
#include "cuda/gemm_lt.h"
#include "cuda/gemv.h"
#include "cuda/layer_ops.h"
#include "cuda/rope_table.h"
#include "cuda/sampling.h"
#include "cuda/step_trace.h"
#include "engine/backend/backend.h"
#include "engine/model/model_file.h"

namespace chorus::cuda {

// The model's rotary embedding as the kernels take it (cuda_forward.cpp).
RopeSpec rope_of(const ModelConfig& c);

enum class GraphMode { Replay, Eager };

struct CudaBackendOptions {
  BackendOptions base;
  GraphMode graphs = GraphMode::Replay;
  int32_t max_prefill_tokens = 512;
  CudaTuning tuning;
};

// Inputs of one step, laid out identically in pinned host memory and on the device.
struct StepInputsLayout {
  int32_t max_rows = 0, max_blocks = 0;
  size_t tokens = 0, positions = 0, seq_lens = 0, tables = 0, sampling = 0, history = 0, total_bytes = 0;
  static StepInputsLayout make(int32_t max_rows, int32_t max_blocks, int32_t max_sample_rows);
};

class CudaBackend final : public Backend {
 public:
  static Result<std::unique_ptr<CudaBackend>> create(const std::string& model_path, const CudaBackendOptions& opts);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return device_name_; }
  const ModelConfig& config() const override { return model_->config; }
  KvLayout kv_layout() const override { return kv_layout_; }
  int32_t max_batch() const override { return max_batch_; }
  int32_t max_prefill_tokens() const override { return max_prefill_; }
  int32_t max_prefill_seqs() const override { return max_batch_; }
  Result<PrefillResult> prefill(const PrefillChunk& chunk) override;
  // Chunks of more than kGemvMaxSeqs tokens share one pass through the layers (one
  // dequantization and one GEMM per matrix for all their rows); shorter ones share GEMV passes
  // of up to kGemvMaxSeqs rows. A chunk takes the same route and gets the same bits as alone.
  Result<std::vector<PrefillResult>> prefill_batch(std::span<const PrefillChunk> chunks) override;
  Result<DecodeResult> decode(const DecodeBatch& batch) override;
  BackendMemory memory() const override;
  BackendCounters counters() const override { return counters_; }

  void set_graph_mode(GraphMode m) { graph_mode_ = m; }
  // Replaces CudaBackendOptions::tuning and drops the captured graphs (they bake it into their
  // launches). For measurements.
  void set_tuning(const CudaTuning& t);
  const CudaTuning& tuning() const { return tuning_; }
  // Decode steps stamp a timeline of their launches (step_trace.h) while on; switching drops
  // the captured graphs. For measurements, in builds with kStepTraceBuilt (an error otherwise).
  Status set_step_trace(bool on);
  // The launches of the last decode step with their times (empty while tracing is off);
  // waits for the step.
  std::vector<TraceRecord> read_step_trace();

 private:
  CudaBackend() = default;
  void init(const std::string& model_path, const CudaBackendOptions& opts);
  void allocate_buffers(int64_t kv_tokens);
  void apply_tuning(const CudaTuning& t);  // tuning_ and the split shapes

  // One GEMV product: up to three matrices sharing K (a launch per run of one type).
  struct GemvCall {
    const DeviceMatrix* mats[kGemvMaxMats] = {};
    const float* bias[kGemvMaxMats] = {};
    int n_mats = 0;
    GemvInput in;
    GemvOutput out;
    GemvSplitShape split;
    int32_t part_stride = 0;  // output columns of the whole product
    const char* label = "";   // its name in a step trace
    int32_t spread_min_rows = 0;  // CudaTuning::gemv_spread of its launch kind
  };
  void enqueue_gemv(const GemvCall& call, int32_t n_rows);
  GemvParams gemv_params(const GemvCall& call, int32_t n_rows, int first, int last, int32_t col) const;
  // next_norm_w: the weights of the RMSNorm that reads the new residual (norm_from_producer).
  void enqueue_residual_gemv(const DeviceMatrix& m, const __half* x, const float* next_norm_w, GemvSplitShape split,
                             int32_t spread_min_rows, int32_t n_rows, const char* label);
  // The normalized residual rows [row_begin, +n_rows) as a GEMV input. With norm_from_producer:
  // the f16(x w) rows the residual's producer wrote into xw_ for these same weights (the
  // caller's norm_w, wired by enqueue_layers_gemv), scaled by 1 / rms behind the product.
  // Else fused into the GEMV's staging for few rows, or normalized once into h_ by a pass
  // (same f16 values either way).
  GemvInput norm_input(const float* norm_w, int32_t n_rows, int32_t row_begin = 0);
  GemvInput half_input(const __half* x) const;
  GemvOutput residual_output(const float* next_norm_w) const;
  // The weights of the RMSNorm that reads layer il's output: the next layer's attention norm,
  // or the final norm after the last layer.
  const float* norm_after_layer(int32_t il) const;

  // The rows of one prefill pass: consecutive chunks of different sequences.
  struct PackedChunk {
    int32_t row0 = 0, n_rows = 0;  // rows [row0, row0 + n_rows) of the step's buffers
    int32_t first_pos = 0;         // position of row0 in its sequence
  };
  enum class RowKind { Decode, Prompt };

  void enqueue_embed(int32_t n_rows);
  // Rows <= kGemvMaxSeqs: the batched GEMV route with fused norms, residuals and SwiGLU.
  // Decode: one new token per row (fused decode attention). Prompt: prompt rows at any
  // positions of any sequences (attention through qkv_rope + the per-row kernel).
  void enqueue_layers_gemv(int32_t n_rows, int32_t grid_chunks, RowKind kind);
  void enqueue_attention_gemv(int32_t il, int32_t n_rows, int32_t grid_chunks, RowKind kind);
  // Longer prompt chunks: f16 dequantization + cuBLASLt GEMM per matrix for all rows,
  // separate row kernels, and the tiled prefill attention per chunk.
  void enqueue_layers_gemm(int32_t n_rows, std::span<const PackedChunk> chunks);
  void enqueue_attention_prompt(int32_t il, const PackedChunk& chunk);
  // One pass of prefill_batch: uploads the chunks' rows, runs the layers, returns logits and
  // samples. Synchronizes before returning (the pinned inputs are reused by the next pass).
  void run_prefill_pass(std::span<const PrefillChunk* const> chunks, std::span<PrefillResult* const> out);
  // Copies the residual rows (their sums of squares and f16 norm inputs) `rows[i]` to row i, i ascending,
  // rows[i] >= i: the last rows of the chunks that sample, gathered for one LM head launch.
  void gather_rows(std::span<const int32_t> rows);
  void enqueue_matmul_gemm(const DeviceMatrix* const* mats, int n_mats, const __half* x, int32_t n_rows,
                           int32_t out_stride);
  AttentionParams attention_params(int32_t il, int32_t n_rows, int32_t grid_chunks) const;
  QkvRopeParams qkv_rope_params(const AttentionParams& ap, const DeviceLayer* biases) const;
  void enqueue_lm_head(int32_t row_begin, int32_t n_rows);
  void enqueue_sample(int32_t n_rows);
  // A span for the launch being enqueued while a traced decode step is enqueued, else nullptr.
  TraceSpan* trace_slot(const char* label, int64_t size_bytes, std::string weight_types = {}) const {
    return trace_ ? trace_->slot(label, size_bytes, std::move(weight_types)) : nullptr;
  }
  void enqueue_decode(int32_t n_rows, int32_t max_chunks);
  void run_decode_graph(int32_t n_rows, int32_t max_chunks);

  Status check_seq(const SeqState& s, int32_t n_new) const;
  // The sampler writes -1 where the logits left it no token (not finite numbers: a damaged
  // model file); what: "decode" / "prefill".
  Status check_sampled(std::span<const int32_t> tokens, const char* what) const;
  void fill_sampling(int32_t row, const SeqState& s);
  void upload_inputs();

  std::unique_ptr<ModelFile> model_;
  DeviceModel weights_;
  std::string device_name_;
  int n_sms_ = 0;
  KvLayout kv_layout_;
  int32_t max_batch_ = 32, max_prefill_ = 512, context_tokens_ = 4096;
  int32_t max_rows_ = 0, max_blocks_ = 0, max_chunks_ = 0;
  GraphMode graph_mode_ = GraphMode::Replay;

  // Split shapes per matrix group, fixed at load (never depend on M).
  GemvSplitShape split_qkv_, split_o_, split_ffn_up_, split_down_, split_lm_;
  CudaTuning tuning_;  // negative counts read as 0

  std::unique_ptr<Stream> stream_;
  std::unique_ptr<GemmLt> gemm_;
  DeviceBuffer<__half> kv_cache_;   // [n_layers][2][n_blocks][n_kv_heads][block_tokens][head_dim]
  DeviceBuffer<float> x_;           // [max_rows][n_embd] residual stream
  DeviceBuffer<float> ss_;          // [max_rows][ss_stride]: sums of squares of x_ per 64 columns
  int32_t ss_stride_ = 0;
  DeviceBuffer<__half> h_;          // [max_rows][h_stride]: attention output / normalized rows (GEMM route)
  DeviceBuffer<__half> h_ff_;       // [max_rows][h_stride], SwiGLU output (the down projection's input)
  DeviceBuffer<__half> xw_;         // [max_rows][xw_stride]: f16(x_ * next norm's weights) (norm_from_producer)
  int32_t xw_stride_ = 0;
  int32_t h_stride_ = 0;
  DeviceBuffer<float> mm_out_;      // [max_rows][mm_stride]: q|k|v, gate|up, GEMM outputs
  int32_t mm_stride_ = 0;
  DeviceBuffer<float> partials_;    // GEMV split partials [16][max_batch][mm_stride]
  int64_t split_stride_ = 0;
  DeviceBuffer<int32_t> gemv_counters_;  // [max row blocks of a split launch], zero between launches
  DeviceBuffer<int32_t> attn_counters_;  // [max_batch][n_kv_heads], zero between launches
  DeviceBuffer<float2> rope_cs_;          // [context_tokens][rope_dim / 2]: (cos, sin), rope_table.h
  DeviceBuffer<float> argmax_val_;  // [LM head row blocks][kGemvMaxSeqs]
  DeviceBuffer<int32_t> argmax_idx_;
  DeviceBuffer<float> q_;           // [max_rows][q_dim]
  DeviceBuffer<float> attn_o_, attn_ml_;
  DeviceBuffer<float> logits_;      // [max_batch][n_vocab]
  DeviceBuffer<float> sample_work_; // [max_batch][n_vocab]
  DeviceBuffer<__half> w_f16_;      // prefill: one dequantized matrix
  DeviceBuffer<uint8_t> inputs_dev_;
  PinnedBuffer<uint8_t> inputs_host_;
  StepInputsLayout inputs_;
  DeviceBuffer<int32_t> out_tokens_dev_;
  PinnedBuffer<int32_t> out_tokens_host_;
  PinnedBuffer<float> logits_host_;

  // Graph per (rows, attention chunk bucket). Buffer addresses are fixed for the backend's
  // life; `buffers_generation_` is part of the key so a reallocation can never hit a stale graph.
  using GraphKey = std::tuple<int32_t, int32_t, uint64_t>;
  std::map<GraphKey, GraphExec> graphs_;
  std::set<GraphKey> eager_keys_;
  uint64_t buffers_generation_ = 0;
  // Forgets every captured graph and eager fallback: after a reallocation, or when a setting
  // baked into the launches changes. The next step of each shape captures again.
  void drop_graphs();
  BackendCounters counters_;
  std::unique_ptr<StepTrace> trace_;  // set_step_trace
};

}  // namespace chorus::cuda
