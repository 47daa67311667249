#pragma once
// Run-time loading of the CUDA backend (libchorus_cuda.so) with dlopen. The engine includes
// no CUDA header and links no CUDA library, so the app and CLI run on machines without an
// NVIDIA driver; there these functions say why the GPU is not usable.
#include <memory>
#include <string>

#include "engine/backend/backend.h"
#include "engine/core/result.h"

namespace chorus {

// Loads libchorus_cuda.so and creates a CUDA backend for the model. Errors say what is
// missing (library, driver, device, memory: needed vs free).
Result<std::unique_ptr<Backend>> load_cuda_backend(const std::string& model_path, const BackendOptions& options);

// Empty when the CUDA backend can be used on this machine; otherwise the reason, in words a
// user can act on ("no NVIDIA driver is installed", "libchorus_cuda.so not found: ...").
std::string cuda_unavailable_reason();

// Where the library is looked for, in order: $CHORUS_CUDA_LIB (a file path), next to the
// executable, ../lib beside the executable's folder, then the dynamic loader's search path.
std::string cuda_library_search_description();

}  // namespace chorus
