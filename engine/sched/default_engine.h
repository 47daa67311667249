#pragma once
// The production wiring of Engine: backends from engine/backend (CPU; CUDA when its
// library is present) and the GGUF's tokenizer and chat template as the text codec.
#include <memory>

#include "engine/sched/engine.h"

namespace chorus {

BackendFactory default_backend_factory();
CodecFactory default_codec_factory();
EngineOptions default_engine_options();
std::unique_ptr<Engine> make_default_engine();

}  // namespace chorus
