// libFuzzer target: arbitrary bytes as a chat template, rendered against a fixed context.
// Any input must give a value or an Error: no crash, no hang, no sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/chat/chat_template.h"
#include "engine/chat/json.h"

namespace {

const chorus::chat::Value& fixed_context() {
  static const chorus::chat::Value ctx = [] {
    auto parsed = chorus::chat::parse_json(R"({
      "messages": [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
        {"role": "user", "content": "And times 3?\nAnswer in one word."}
      ],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
      "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
    return parsed.ok() ? parsed.value() : chorus::chat::Value::dict();
  }();
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chorus::chat::RenderOptions options;
  options.clock = chorus::chat::fixed_clock(2026, 12, 2, 12, 0, 0);
  options.max_steps = 200'000;
  options.max_output_bytes = size_t{1} << 20;
  auto out = chorus::chat::render_template(
      std::string_view(reinterpret_cast<const char*>(data), size), fixed_context(), options);
  (void)out;
  return 0;
}
