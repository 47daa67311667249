#include "engine/backend/solo_run.h"

#include <algorithm>
#include <numeric>

namespace chorus {

Result<SoloRunResult> solo_run(Backend& backend, const std::vector<int32_t>& prompt, const SoloRunOptions& options) {
  if (prompt.empty()) return make_error("the prompt has no tokens");
  const KvLayout kv = backend.kv_layout();
  const int64_t total = static_cast<int64_t>(prompt.size()) + options.n_generate;
  const int64_t n_blocks = (total + kv.block_tokens - 1) / kv.block_tokens;
  if (n_blocks > kv.n_blocks) {
    return make_error("the sequence needs " + std::to_string(total) + " KV slots but the cache holds " +
                      std::to_string(static_cast<int64_t>(kv.n_blocks) * kv.block_tokens));
  }
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  std::iota(table.begin(), table.end(), 0);

  SoloRunResult out;
  std::vector<int32_t> history = prompt;
  SeqState seq;
  seq.block_table = table;
  seq.sampling = options.sampling;
  const size_t chunk_max = static_cast<size_t>(std::max(1, backend.max_prefill_tokens()));
  int32_t next = -1;
  for (size_t start = 0; start < prompt.size(); start += chunk_max) {
    const size_t n = std::min(chunk_max, prompt.size() - start);
    PrefillChunk chunk;
    seq.n_past = static_cast<int32_t>(start);
    seq.history = std::span<const int32_t>(history.data(), start + n);
    chunk.seq = seq;
    chunk.tokens = std::span<const int32_t>(prompt.data() + start, n);
    chunk.logits = options.prompt_logits;
    const bool last = start + n == prompt.size();
    chunk.output = last && options.n_generate > 0 ? PrefillChunk::Output::SampleLast : PrefillChunk::Output::None;
    auto r = backend.prefill(chunk);
    if (!r) return r.error();
    if (options.prompt_logits == LogitsMode::Return) {
      out.prompt_logits.insert(out.prompt_logits.end(), r->logits.begin(), r->logits.end());
    }
    if (last) next = r->sampled_token;
  }
  for (int32_t g = 0; g < options.n_generate; ++g) {
    out.generated.push_back(next);
    history.push_back(next);
    if (options.on_token && !options.on_token(next)) break;
    if (g + 1 == options.n_generate) break;
    DecodeBatch batch;
    seq.n_past = static_cast<int32_t>(history.size()) - 1;
    seq.history = history;
    seq.sample_index = static_cast<uint64_t>(g) + 1;
    batch.seqs.push_back(seq);
    batch.tokens.push_back(next);
    auto r = backend.decode(batch);
    if (!r) return r.error();
    next = r->tokens[0];
  }
  return out;
}

}  // namespace chorus
