#include "engine/sched/engine_api.h"

namespace chorus {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::EndOfGeneration: return "end-of-generation";
    case FinishReason::StopString: return "stop-string";
    case FinishReason::MaxTokens: return "max-tokens";
    case FinishReason::ContextFull: return "context-full";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "unknown";
}

}  // namespace chorus
