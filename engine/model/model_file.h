#pragma once
// An opened model: the mapped GGUF file, its config and the validated tensor views into it.
// Held by unique_ptr because the views point into the mapping.
#include <memory>
#include <string>

#include "engine/core/result.h"
#include "engine/gguf/gguf_reader.h"
#include "engine/model/model_config.h"
#include "engine/model/weights.h"

namespace chorus {

struct ModelFile {
  gguf::Reader reader;
  ModelConfig config;
  ModelWeights weights;

  static Result<std::unique_ptr<ModelFile>> open(const std::string& path);
};

}  // namespace chorus
