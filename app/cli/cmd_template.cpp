// chorus-cli template (--template F.jinja | --model M.gguf) --context ctx.json
// Renders a chat template with the engine's Jinja interpreter and prints exactly the
// rendered text. The context file is a JSON object whose keys become template variables
// (messages, add_generation_prompt, bos_token, eos_token, tools...).
// Exit codes: 0 rendered; 1 bad arguments or unreadable input; 2 the template failed
// (its message, e.g. from raise_exception, goes to stderr).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/json.h"
#include "engine/gguf/gguf_reader.h"

namespace chorus::cli {
namespace {

constexpr int kTemplateErrorExit = 2;

Result<std::string> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read " + path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return make_error("error reading " + path);
  return s;
}

Result<std::string> template_source(const Args& args) {
  const auto tmpl_path = args.get("--template");
  const auto model_path = args.get("--model");
  if (tmpl_path && model_path) return make_error("template: give --template or --model, not both");
  if (tmpl_path) return read_all(*tmpl_path);
  if (!model_path) return make_error("template: --template F.jinja or --model M.gguf is required");
  auto reader = gguf::Reader::open(*model_path);
  if (!reader.ok()) return reader.error();
  auto source = reader->get_string("tokenizer.chat_template");
  if (!source.ok()) return make_error(*model_path + ": no tokenizer.chat_template in its metadata");
  return source;
}

}  // namespace

int cmd_template(int argc, char** argv) {
  auto args = parse_args(argc, argv, 2, {"--template", "--model", "--context"}, {});
  if (!args.ok()) return fail("template: " + args.message());
  if (!args->positional.empty()) return fail("template: unexpected argument '" + args->positional[0] + "'");
  auto source = template_source(*args);
  if (!source.ok()) return fail(source.message());
  const auto context_path = args->get("--context");
  if (!context_path) return fail("template: --context ctx.json is required");
  auto context_text = read_all(*context_path);
  if (!context_text.ok()) return fail(context_text.message());
  auto context = chat::parse_json(*context_text);
  if (!context.ok()) return fail(*context_path + ": " + context.message());
  if (!context->is_dict()) return fail(*context_path + ": the context must be a JSON object");
  auto rendered = chat::render_template(*source, *context);
  if (!rendered.ok()) return fail("template error: " + rendered.message(), kTemplateErrorExit);
  std::fwrite(rendered->data(), 1, rendered->size(), stdout);
  return 0;
}

}  // namespace chorus::cli
