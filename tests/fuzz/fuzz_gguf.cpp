// libFuzzer target: arbitrary bytes through the GGUF parser and the model validation that
// follows it. Any crash, leak or undefined behaviour is a bug; errors are expected.
#include <cstddef>
#include <cstdint>

#include "engine/gguf/gguf_reader.h"
#include "engine/model/model_config.h"
#include "engine/model/weights.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = chorus::gguf::Reader::parse(data, size, "fuzz.gguf");
  if (!r.ok()) return 0;
  for (const auto& key : r->metadata_keys()) (void)r->find(key)->to_display_string();
  auto config = chorus::ModelConfig::from_gguf(*r);
  if (!config.ok()) return 0;
  (void)chorus::ModelWeights::from_gguf(*r, *config);
  return 0;
}
