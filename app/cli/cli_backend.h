#pragma once
// Opening a model on the backend the user asked for (--backend, --threads).
#include <memory>
#include <string>

#include "app/cli/args.h"
#include "engine/backend/backend.h"

namespace chorus::cli {

// Options every model-running sub-command accepts.
inline const std::set<std::string> kBackendOptions = {"--backend", "--threads", "--ctx"};

Result<std::unique_ptr<Backend>> open_backend(const std::string& model_path, const Args& args,
                                              int64_t kv_tokens_needed);

}  // namespace chorus::cli
