#pragma once
// The CPU implementation of Backend: float32 math on all cores, F32 paged KV cache.
#include <memory>
#include <string>

#include "engine/backend/backend.h"
#include "engine/core/result.h"

namespace chorus {

Result<std::unique_ptr<Backend>> create_cpu_backend(const std::string& model_path, const BackendOptions& options);

}  // namespace chorus
