#pragma once
// Chat templates: the model's own `tokenizer.chat_template` (a Jinja template) rendered with
// the semantics Hugging Face's apply_chat_template gives it: Python jinja2 in an immutable
// sandbox with trim_blocks, lstrip_blocks and loop controls, HF's `tojson`, and the globals
// `raise_exception` and `strftime_now`. Any input, however malformed, yields a value or an
// Error; output size, work and nesting are bounded so a hostile template cannot hang us.
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/json.h"
#include "engine/chat/value.h"
#include "engine/core/result.h"

namespace chorus::chat {

struct Template;

struct RenderOptions {
  // Local wall-clock time for strftime_now(); empty means the system clock. Tests pin it.
  std::function<std::tm()> clock;
  size_t max_output_bytes = size_t{16} << 20;  // also caps any single string or list built
  int64_t max_steps = 5'000'000;               // expression/statement evaluations
  int max_depth = 400;                         // nested evaluation incl. macro calls
};

// A parsed template, reusable across renders (the chat pipeline parses once per model).
class ChatTemplate {
 public:
  static Result<ChatTemplate> parse(std::string_view source);
  // `context` must be a dict; its keys become template variables.
  Result<std::string> render(const Value& context, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const Template> tmpl_;
};

Result<std::string> render_template(std::string_view template_source, const Value& context,
                                    const RenderOptions& options = {});

struct ChatMessage {
  std::string role, content;
};

enum class GenerationPrompt { kOmit, kAdd };

Result<std::string> apply_chat_template(std::string_view tmpl, const std::vector<ChatMessage>& messages,
                                        GenerationPrompt add_generation_prompt,
                                        const std::string& bos_token, const std::string& eos_token);

// A fixed clock for RenderOptions::clock (tests, reproducible prompts).
std::function<std::tm()> fixed_clock(int year, int month, int day, int hour, int minute, int second);

}  // namespace chorus::chat
