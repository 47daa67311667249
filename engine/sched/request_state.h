#pragma once
// What the engine keeps per request besides the scheduler's Sequence: callbacks, stop
// conditions, the streaming detokenizer and the text and ids waiting to be delivered.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/core/result.h"
#include "engine/sched/engine_api.h"
#include "engine/sched/stop_matcher.h"
#include "engine/sched/text_codec.h"

namespace chorus {

struct RequestState {
  RequestId id = 0;
  RequestCallbacks callbacks;
  int32_t max_tokens = 0;   // <= 0: no limit but the context
  bool ignore_eos = false;
  std::unique_ptr<StreamDecoder> decoder;
  StopMatcher stop;

  // Delivered in the deliver phase of the current step, then cleared (capacity is kept, so
  // steady streaming does not allocate).
  TokenDelta delta;
  std::string scratch_text;  // one token's text before stop matching
  bool touched = false;      // in this step's delivery list

  std::optional<FinishReason> finish;
  std::optional<Error> error;  // reported with on_error before on_finish(Error)

  RequestStats stats;
  int64_t t_submit_us = 0;
  int64_t t_scheduled_us = -1;    // first prefill chunk started
  int64_t t_first_token_us = -1;
  int64_t t_last_token_us = -1;
  int64_t t_prefill_compute_us = 0;  // backend time spent on this request's prompt chunks
};

}  // namespace chorus
