#include "engine/backend/fake_backend.h"

#include <string>
#include <thread>

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;

int64_t us_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
}

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64 finalizer over the running hash: cheap, well spread, platform independent.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

}  // namespace

void FakeCallLog::add(FakeCall call) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back(std::move(call));
}

std::vector<FakeCall> FakeCallLog::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

size_t FakeCallLog::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_.size();
}

FakeBackend::FakeBackend(FakeBackendOptions options) : opt_(std::move(options)) {
  config_.arch_name = "fake";
  config_.model_name = "fake";
  config_.n_vocab = opt_.n_vocab;
  config_.n_ctx_train = opt_.n_ctx_train;
  config_.n_embd = 64;
  config_.n_layers = 1;
  config_.n_heads = 1;
  config_.n_kv_heads = 1;
  config_.head_dim = 64;
  kv_.assign(static_cast<size_t>(opt_.kv.n_blocks) * static_cast<size_t>(opt_.kv.block_tokens),
             -1);
}

int32_t FakeBackend::next_token(int32_t input_token, int32_t position, uint64_t digest,
                                const SamplingParams& sampling, uint64_t sample_index,
                                int32_t n_vocab) {
  uint64_t h = mix(mix(digest, static_cast<uint64_t>(input_token)),
                   static_cast<uint64_t>(position));
  if (!sampling.is_greedy()) h = mix(mix(h, sampling.seed), sample_index);
  return static_cast<int32_t>(h % static_cast<uint64_t>(n_vocab));
}

Status FakeBackend::write_kv(const SeqState& seq, int32_t position, int32_t token) {
  const int32_t bt = opt_.kv.block_tokens;
  const size_t block_index = static_cast<size_t>(position / bt);
  if (block_index >= seq.block_table.size()) {
    return make_error("fake backend: seq " + std::to_string(seq.seq_id) + " position " +
                      std::to_string(position) + " is past its block table");
  }
  const int32_t block = seq.block_table[block_index];
  if (block < 0 || block >= opt_.kv.n_blocks) {
    return make_error("fake backend: block id " + std::to_string(block) + " out of range");
  }
  kv_[static_cast<size_t>(block) * bt + position % bt] = token;
  return Ok{};
}

uint64_t FakeBackend::kv_digest(const SeqState& seq, int32_t n_positions) const {
  const int32_t bt = opt_.kv.block_tokens;
  uint64_t h = 0x51ed2701u;
  for (int32_t p = 0; p < n_positions; ++p) {
    const int32_t block = seq.block_table[static_cast<size_t>(p / bt)];
    h = mix(h, static_cast<uint64_t>(kv_[static_cast<size_t>(block) * bt + p % bt]));
  }
  return h;
}

Status FakeBackend::check_failure(const FakeCall& call) const {
  if (opt_.on_call) opt_.on_call(call);
  if (opt_.fail_if && opt_.fail_if(call)) {
    return make_error("fake backend: injected failure at call " + std::to_string(call.index));
  }
  return Ok{};
}

void FakeBackend::record(FakeCall call) {
  if (opt_.log) opt_.log->add(std::move(call));
}

Result<PrefillResult> FakeBackend::prefill(const PrefillChunk& chunk) {
  auto r = prefill_batch(std::span<const PrefillChunk>(&chunk, 1));
  if (!r.ok()) return r.error();
  return std::move(r->front());
}

// One call for all chunks (one log entry, one injected failure check); each chunk computes
// exactly what it would alone.
Result<std::vector<PrefillResult>> FakeBackend::prefill_batch(std::span<const PrefillChunk> chunks) {
  FakeCall call;
  call.kind = FakeCall::Kind::Prefill;
  call.index = n_calls_++;
  bool empty_chunk = false;
  for (const PrefillChunk& c : chunks) {
    call.seq_ids.push_back(c.seq.seq_id);
    call.n_past.push_back(c.seq.n_past);
    call.chunk_tokens.push_back(static_cast<int32_t>(c.tokens.size()));
    call.n_tokens += static_cast<int32_t>(c.tokens.size());
    empty_chunk = empty_chunk || c.tokens.empty();
  }
  CHORUS_TRY(check_failure(call));
  if (chunks.empty() || empty_chunk || call.n_tokens > opt_.max_prefill_tokens ||
      static_cast<int32_t>(chunks.size()) > opt_.max_prefill_seqs) {
    return make_error("fake backend: prefill of " + std::to_string(chunks.size()) + " chunks, " +
                      std::to_string(call.n_tokens) + " tokens (max " +
                      std::to_string(opt_.max_prefill_seqs) + " chunks, " +
                      std::to_string(opt_.max_prefill_tokens) + " tokens, none empty)");
  }
  record(call);
  std::vector<PrefillResult> out;
  for (const PrefillChunk& c : chunks) {
    auto r = compute_chunk(c);
    if (!r.ok()) return r.error();
    out.push_back(std::move(r).value());
  }
  if (opt_.prefill_delay_per_token.count() > 0) {
    std::this_thread::sleep_for(opt_.prefill_delay_per_token * call.n_tokens);
  }
  return out;
}

Result<PrefillResult> FakeBackend::compute_chunk(const PrefillChunk& chunk) {
  const int32_t n_tokens = static_cast<int32_t>(chunk.tokens.size());
  for (int32_t i = 0; i < n_tokens; ++i) {
    CHORUS_TRY(write_kv(chunk.seq, chunk.seq.n_past + i, chunk.tokens[static_cast<size_t>(i)]));
  }
  PrefillResult r;
  if (chunk.output == PrefillChunk::Output::SampleLast) {
    const int32_t last_pos = chunk.seq.n_past + n_tokens - 1;
    r.sampled_token = next_token(chunk.tokens.back(), last_pos, kv_digest(chunk.seq, last_pos + 1),
                                 chunk.seq.sampling, chunk.seq.sample_index, opt_.n_vocab);
  }
  if (chunk.logits == LogitsMode::Return) {
    r.logits.assign(static_cast<size_t>(n_tokens) * static_cast<size_t>(opt_.n_vocab), 0.0f);
  }
  return r;
}

Result<DecodeResult> FakeBackend::decode(const DecodeBatch& batch) {
  const auto t0 = Clock::now();
  FakeCall call;
  call.kind = FakeCall::Kind::Decode;
  call.index = n_calls_++;
  call.n_tokens = static_cast<int32_t>(batch.seqs.size());
  for (const SeqState& s : batch.seqs) {
    call.seq_ids.push_back(s.seq_id);
    call.n_past.push_back(s.n_past);
  }
  CHORUS_TRY(check_failure(call));
  if (batch.seqs.empty() || call.n_tokens > opt_.max_batch ||
      batch.tokens.size() != batch.seqs.size()) {
    return make_error("fake backend: decode batch of " + std::to_string(call.n_tokens) +
                      " sequences (max " + std::to_string(opt_.max_batch) + ")");
  }
  record(std::move(call));
  DecodeResult r;
  r.tokens.resize(batch.seqs.size());
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    CHORUS_TRY(write_kv(batch.seqs[i], batch.seqs[i].n_past, batch.tokens[i]));
  }
  r.times.t_upload_us = us_since(t0);
  const auto t1 = Clock::now();
  if (opt_.decode_delay.count() > 0) std::this_thread::sleep_for(opt_.decode_delay);
  std::vector<uint64_t> digests(batch.seqs.size());
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    digests[i] = kv_digest(batch.seqs[i], batch.seqs[i].n_past + 1);
  }
  r.times.t_forward_us = us_since(t1);
  const auto t2 = Clock::now();
  for (size_t i = 0; i < batch.seqs.size(); ++i) {
    const SeqState& s = batch.seqs[i];
    r.tokens[i] = next_token(batch.tokens[i], s.n_past, digests[i], s.sampling, s.sample_index,
                             opt_.n_vocab);
  }
  r.times.t_sample_us = us_since(t2);
  if (batch.logits == LogitsMode::Return) {
    r.logits.assign(batch.seqs.size() * static_cast<size_t>(opt_.n_vocab), 0.0f);
  }
  return r;
}

BackendMemory FakeBackend::memory() const {
  BackendMemory m;
  m.kv_cache_bytes = static_cast<int64_t>(kv_.size() * sizeof(int32_t));
  return m;
}

}  // namespace chorus
