#pragma once
// Builds the engine the app runs on: the real one for a GGUF model, or the fake one.
#include <memory>

#include "engine/sched/engine_api.h"

namespace chorus::gui {

struct EngineChoice {
  bool fake = false;
  double fake_tok_per_s = 200.0;
  bool fake_trace_tokens = false;  // env CHORUS_FAKE_TRACE=1 (crash-recovery test)
};

std::unique_ptr<EngineApi> makeEngine(const EngineChoice& choice);

}  // namespace chorus::gui
