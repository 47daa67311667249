#pragma once
// What one engine step needs from a compute backend, and nothing more. The scheduler owns
// the KV block allocation and hands the backend plain data; the backend owns the weights,
// the KV storage, and the math. CPU and CUDA implement it; tests use a fake.
//
// KV cache layout: fixed blocks of `KvLayout::block_tokens` token slots. A sequence's
// block table lists the block ids holding its positions in order: position p lives in
// block_table[p / block_tokens], slot p % block_tokens.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/model/model_config.h"
#include "engine/sample/sampling_params.h"

namespace chorus {

struct KvLayout {
  int32_t block_tokens = 16;  // token slots per block
  int32_t n_blocks = 0;       // blocks in the whole cache
};

enum class LogitsMode { None, Return };  // whether a step copies logits back to the host

// One sequence as a step sees it.
struct SeqState {
  int64_t seq_id = 0;                   // stable for the request's life (for logging only)
  std::span<const int32_t> block_table; // enough blocks for n_past + new tokens
  int32_t n_past = 0;                   // tokens already in the KV cache
  SamplingParams sampling;
  std::span<const int32_t> history;     // recent tokens, for penalties (may be empty)
  uint64_t sample_index = 0;            // which sampled token this is; with the seed it picks
                                        // the random draw, so results do not depend on batching
};

// A prompt chunk of one sequence: tokens go to positions n_past .. n_past + tokens.size() - 1.
struct PrefillChunk {
  SeqState seq;
  std::span<const int32_t> tokens;
  enum class Output { None, SampleLast } output = Output::None;  // last chunk samples the first token
  LogitsMode logits = LogitsMode::None;  // Return: all rows [n_tokens][n_vocab]
};

struct PrefillResult {
  int32_t sampled_token = -1;  // when output == SampleLast
  std::vector<float> logits;   // [n_tokens][n_vocab] when asked
};

// Every backend's check of its input ids: an id outside [0, n_vocab) would index past the
// embedding table (on a GPU, a fault that leaves the device unusable for every chat).
inline Status check_token_ids(std::span<const int32_t> tokens, int32_t n_vocab) {
  for (int32_t t : tokens) {
    if (t < 0 || t >= n_vocab) {
      return make_error("token id " + std::to_string(t) + " is out of range (vocabulary has " +
                        std::to_string(n_vocab) + " tokens)");
    }
  }
  return Ok{};
}

// One decode step for M sequences, each adding one token at its own position n_past.
struct DecodeBatch {
  std::vector<SeqState> seqs;    // [M]
  std::vector<int32_t> tokens;   // [M] input token of each sequence
  LogitsMode logits = LogitsMode::None;
};

// Phase times inside the backend, microseconds. Backends fill what they measure.
struct BackendTimes {
  int64_t t_upload_us = 0;
  int64_t t_forward_us = 0;
  int64_t t_sample_us = 0;
  int64_t t_download_us = 0;
};

struct DecodeResult {
  std::vector<int32_t> tokens;  // [M] sampled ids
  std::vector<float> logits;    // [M][n_vocab] when asked
  BackendTimes times;
};

struct BackendMemory {
  int64_t weights_bytes = 0;
  int64_t kv_cache_bytes = 0;
  int64_t device_total_bytes = 0;  // 0 when not meaningful (CPU)
  int64_t device_free_bytes = 0;
};

struct BackendCounters {
  int64_t graph_captures = 0;
  int64_t graph_replays = 0;
  int64_t eager_steps = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;         // "cpu", "cuda", "fake"
  virtual std::string device_name() const = 0;  // "AMD EPYC ... (16 threads)", "NVIDIA H200"
  virtual const ModelConfig& config() const = 0;
  virtual KvLayout kv_layout() const = 0;
  virtual int32_t max_batch() const = 0;         // largest M of a decode step
  virtual int32_t max_prefill_tokens() const = 0;// largest prefill call, in tokens
  virtual Result<PrefillResult> prefill(const PrefillChunk& chunk) = 0;
  // Most sequences whose chunks one prefill_batch() call takes (1: one at a time).
  virtual int32_t max_prefill_seqs() const { return 1; }
  // The chunks of several different sequences in one call, at most max_prefill_seqs() of
  // them and max_prefill_tokens() tokens in all; result i belongs to chunks[i]. A backend
  // that shares work between them (one pass over the weights for all their rows) overrides
  // this; each chunk's results must be what prefill() gives for it alone, bit for bit, so
  // packing never changes a conversation. An error fails the whole call.
  virtual Result<std::vector<PrefillResult>> prefill_batch(std::span<const PrefillChunk> chunks) {
    std::vector<PrefillResult> out;
    out.reserve(chunks.size());
    for (const PrefillChunk& c : chunks) {
      auto r = prefill(c);
      if (!r.ok()) return r.error();
      out.push_back(std::move(r).value());
    }
    return out;
  }
  virtual Result<DecodeResult> decode(const DecodeBatch& batch) = 0;
  virtual BackendMemory memory() const = 0;
  virtual BackendCounters counters() const { return {}; }
};

struct BackendOptions {
  int32_t n_threads = 0;       // CPU threads; 0: all cores
  int32_t context_tokens = 4096;   // per-sequence context limit asked by the user
  int64_t kv_cache_tokens = 0;     // total KV token slots; 0: backend default
  int32_t max_batch = 32;
};

}  // namespace chorus
