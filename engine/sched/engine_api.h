#pragma once
// The public face of the engine service (DESIGN.md §2): thread-safe, used by the GUI, the
// CLI and the benchmarks. `Engine` implements it on a real backend; UI tests implement it
// with a deterministic fake. Callbacks run on the engine thread and must not block.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/sample/sampling_params.h"

namespace chorus {

using RequestId = uint64_t;

struct ChatMessage {
  std::string role;     // "system", "user", "assistant"
  std::string content;
};

struct Request {
  // Either messages (rendered with the model's chat template, special tokens parsed only in
  // the template's own text) or ready prompt tokens; messages win when both are set.
  std::vector<ChatMessage> messages;
  std::vector<int32_t> prompt_tokens;
  SamplingParams sampling;
  int32_t max_tokens = 512;               // <= 0: no limit but the context
  std::vector<std::string> stop_strings;  // matched on the detokenized text, across tokens
  int32_t priority = 0;                   // higher runs first and is preempted last
  bool ignore_eos = false;                // benchmarks: generate exactly max_tokens
};

enum class FinishReason {
  EndOfGeneration,  // the model emitted an end-of-generation token
  StopString,
  MaxTokens,
  ContextFull,      // the sequence reached the context limit
  Cancelled,
  Error,
};
const char* finish_reason_name(FinishReason r);

struct TokenDelta {
  RequestId id = 0;
  std::string text;              // valid UTF-8; may be empty while a character is incomplete
  std::vector<int32_t> token_ids;
};

struct RequestStats {
  int32_t n_prompt_tokens = 0;
  int32_t n_generated_tokens = 0;
  int64_t t_queued_us = 0;          // submit -> first scheduled
  int64_t t_first_token_us = 0;     // submit -> first token (TTFT)
  double prefill_tok_per_s = 0.0;
  double decode_tok_per_s = 0.0;
  int32_t n_preemptions = 0;
};

struct RequestCallbacks {
  std::function<void(const TokenDelta&)> on_delta;
  std::function<void(RequestId, FinishReason, const RequestStats&)> on_finish;
  std::function<void(RequestId, const Error&)> on_error;  // followed by on_finish(Error)
};

// Phase times of steps, microseconds. upload to download are the decode call's; prefill is
// the call for the prompt chunks computed in the same step, after it.
struct StepPhaseTimes {
  double schedule_us = 0, upload_us = 0, forward_us = 0, sample_us = 0, download_us = 0,
         prefill_us = 0, detokenize_us = 0, deliver_us = 0, step_us = 0;
};

struct StatsSnapshot {
  std::string backend_name;
  std::string device_name;
  std::string model_name;
  bool model_loaded = false;
  int32_t current_batch = 0;            // M of the last step
  int32_t max_batch_seen = 0;           // largest M so far
  int32_t n_running = 0, n_waiting = 0;
  int64_t n_steps = 0;
  int64_t n_tokens_generated = 0;
  double aggregate_tok_per_s = 0.0;     // decode tokens/s over the last few seconds
  double prefill_tok_per_s = 0.0;       // prompt tokens per second of prompt computation, same span
  StepPhaseTimes last_step;             // the most recent step
  StepPhaseTimes mean_step;             // mean over recent steps
  int64_t kv_blocks_used = 0, kv_blocks_total = 0;
  int64_t weights_bytes = 0, kv_cache_bytes = 0, device_total_bytes = 0, device_free_bytes = 0;
  int64_t graph_captures = 0, graph_replays = 0;
  struct PerRequest { RequestId id; RequestStats stats; bool running; };
  std::vector<PerRequest> requests;     // active requests
};

struct LoadOptions {
  std::string model_path;
  std::string backend = "auto";  // "auto", "cpu", "cuda"
  int32_t n_threads = 0;         // CPU threads; 0: all
  int32_t context_tokens = 4096;
};

class EngineApi {
 public:
  virtual ~EngineApi() = default;
  // Blocks until loaded or failed; running requests of a previous model finish Cancelled.
  virtual Status load_model(const LoadOptions& options) = 0;
  virtual RequestId submit(Request request, RequestCallbacks callbacks) = 0;
  virtual void cancel(RequestId id) = 0;  // takes effect at the next step
  virtual StatsSnapshot stats() const = 0;
};

}  // namespace chorus
