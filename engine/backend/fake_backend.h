#pragma once
// A deterministic stand-in for a compute backend, for scheduler, engine, UI and bench
// tests. The next token is a hash of the input token, its position and the tokens the
// sequence's block table reads back from the fake KV cache, so it depends on nothing but
// the sequence's own content: batched == solo, and any block-table mistake of the
// scheduler (shared, missing or stale blocks) changes the output. It records every call.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/backend/backend.h"

namespace chorus {

struct FakeCall {
  enum class Kind { Prefill, Decode };
  Kind kind = Kind::Decode;
  uint64_t index = 0;             // call number since creation
  std::vector<int64_t> seq_ids;   // [M] for a decode, [chunks] for a prefill
  std::vector<int32_t> n_past;    // [M] / [chunks]
  std::vector<int32_t> chunk_tokens;  // [chunks] of a prefill: each chunk's length
  int32_t n_tokens = 0;           // prefill: all chunks' tokens; M for a decode
};

// Thread-safe call log, shared between the backend (engine thread) and a test.
class FakeCallLog {
 public:
  void add(FakeCall call);
  std::vector<FakeCall> snapshot() const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::vector<FakeCall> calls_;
};

struct FakeBackendOptions {
  int32_t n_vocab = 256;
  int32_t n_ctx_train = 8192;
  KvLayout kv{16, 1024};
  int32_t max_batch = 32;
  int32_t max_prefill_tokens = 512;
  int32_t max_prefill_seqs = 1;  // > 1: prefill_batch takes several sequences in one call
  std::chrono::microseconds decode_delay{0};           // per decode call
  std::chrono::microseconds prefill_delay_per_token{0};
  std::shared_ptr<FakeCallLog> log;                    // null: record nothing
  // Failure injection: a call for which this returns true fails with an Error.
  std::function<bool(const FakeCall&)> fail_if;
  // Runs first in every call, on the engine thread: lets a test hold a step until it has
  // done something (e.g. cancelled), to order events without timing assumptions.
  std::function<void(const FakeCall&)> on_call;
};

class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(FakeBackendOptions options);

  std::string name() const override { return "fake"; }
  std::string device_name() const override { return "deterministic fake"; }
  const ModelConfig& config() const override { return config_; }
  KvLayout kv_layout() const override { return opt_.kv; }
  int32_t max_batch() const override { return opt_.max_batch; }
  int32_t max_prefill_tokens() const override { return opt_.max_prefill_tokens; }
  int32_t max_prefill_seqs() const override { return opt_.max_prefill_seqs; }
  Result<PrefillResult> prefill(const PrefillChunk& chunk) override;
  Result<std::vector<PrefillResult>> prefill_batch(std::span<const PrefillChunk> chunks) override;
  Result<DecodeResult> decode(const DecodeBatch& batch) override;
  BackendMemory memory() const override;

  // The token the fake produces after `input_token` at `position` when the sequence's
  // cache digest (see kv_digest) is `digest`. Public so tests can predict outputs.
  static int32_t next_token(int32_t input_token, int32_t position, uint64_t digest,
                            const SamplingParams& sampling, uint64_t sample_index,
                            int32_t n_vocab);

 private:
  Result<PrefillResult> compute_chunk(const PrefillChunk& chunk);
  Status write_kv(const SeqState& seq, int32_t position, int32_t token);
  uint64_t kv_digest(const SeqState& seq, int32_t n_positions) const;
  Status check_failure(const FakeCall& call) const;
  void record(FakeCall call);

  FakeBackendOptions opt_;
  ModelConfig config_;
  std::vector<int32_t> kv_;  // [n_blocks * block_tokens] token id stored at each slot
  uint64_t n_calls_ = 0;
};

}  // namespace chorus
