#pragma once
// The real TextCodec: the GGUF's tokenizer and its `tokenizer.chat_template` (ChatML when
// the model ships none).
#include <memory>
#include <string>

#include "engine/sched/text_codec.h"

namespace chorus {

Result<std::unique_ptr<TextCodec>> open_gguf_text_codec(const std::string& model_path);

}  // namespace chorus
