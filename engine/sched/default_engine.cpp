#include "engine/sched/default_engine.h"

#include <filesystem>

#include "engine/backend/backend_loader.h"
#include "engine/backend/cpu_backend.h"
#include "engine/sched/gguf_text_codec.h"

namespace chorus {

BackendFactory default_backend_factory() {
  return [](const LoadOptions& load) -> Result<std::unique_ptr<Backend>> {
    std::error_code ec;
    if (!std::filesystem::exists(load.model_path, ec)) {
      return make_error(load.model_path + ": no such file");
    }
    BackendOptions o;
    o.n_threads = load.n_threads;
    o.context_tokens = load.context_tokens;
    if (load.backend == "cpu") return create_cpu_backend(load.model_path, o);
    if (load.backend == "cuda") return load_cuda_backend(load.model_path, o);
    if (load.backend == "auto") {
      // The GPU when one is usable; otherwise the CPU, which always works.
      if (cuda_unavailable_reason().empty()) return load_cuda_backend(load.model_path, o);
      return create_cpu_backend(load.model_path, o);
    }
    return make_error("unknown backend '" + load.backend + "' (auto, cpu, cuda)");
  };
}

CodecFactory default_codec_factory() {
  return [](const LoadOptions& load) { return open_gguf_text_codec(load.model_path); };
}

EngineOptions default_engine_options() {
  EngineOptions o;
  o.make_backend = default_backend_factory();
  o.make_codec = default_codec_factory();
  return o;
}

std::unique_ptr<Engine> make_default_engine() {
  return std::make_unique<Engine>(default_engine_options());
}

}  // namespace chorus
