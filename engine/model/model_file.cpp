#include "engine/model/model_file.h"

namespace chorus {

Result<std::unique_ptr<ModelFile>> ModelFile::open(const std::string& path) {
  auto reader = gguf::Reader::open(path);
  if (!reader) return reader.error();
  auto m = std::make_unique<ModelFile>();
  m->reader = std::move(*reader);
  auto config = ModelConfig::from_gguf(m->reader);
  if (!config) return config.error();
  m->config = std::move(*config);
  auto weights = ModelWeights::from_gguf(m->reader, m->config);
  if (!weights) return weights.error();
  m->weights = std::move(*weights);
  return m;
}

}  // namespace chorus
