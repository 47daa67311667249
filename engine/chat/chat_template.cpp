#include "engine/chat/chat_template.h"

#include "engine/chat/interpreter.h"
#include "engine/chat/parser.h"

namespace chorus::chat {

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  auto tmpl = parse_template(source);
  if (!tmpl.ok()) return tmpl.error();
  ChatTemplate out;
  out.tmpl_ = std::move(tmpl).value();
  return out;
}

Result<std::string> ChatTemplate::render(const Value& context, const RenderOptions& options) const {
  if (!context.is_dict()) return make_error("template context must be a JSON object");
  Interpreter interp(options);
  return interp.render(*tmpl_, context);
}

Result<std::string> render_template(std::string_view template_source, const Value& context,
                                    const RenderOptions& options) {
  auto tmpl = ChatTemplate::parse(template_source);
  if (!tmpl.ok()) return tmpl.error();
  return tmpl->render(context, options);
}

Result<std::string> apply_chat_template(std::string_view tmpl, const std::vector<ChatMessage>& messages,
                                        GenerationPrompt add_generation_prompt,
                                        const std::string& bos_token, const std::string& eos_token) {
  Value list = Value::list({});
  for (const auto& m : messages) {
    Value msg = Value::dict();
    msg.dict_set("role", Value::string(m.role));
    msg.dict_set("content", Value::string(m.content));
    list.list_push(std::move(msg));
  }
  Value context = Value::dict();
  context.dict_set("messages", std::move(list));
  context.dict_set("add_generation_prompt", Value::boolean(add_generation_prompt == GenerationPrompt::kAdd));
  context.dict_set("bos_token", Value::string(bos_token));
  context.dict_set("eos_token", Value::string(eos_token));
  return render_template(tmpl, context);
}

std::function<std::tm()> fixed_clock(int year, int month, int day, int hour, int minute, int second) {
  std::tm t{};
  t.tm_year = year - 1900;
  t.tm_mon = month - 1;
  t.tm_mday = day;
  t.tm_hour = hour;
  t.tm_min = minute;
  t.tm_sec = second;
  t.tm_isdst = 0;
  // Fill in the weekday and day of the year (%a, %j) without touching the time zone.
  std::tm copy = t;
  const std::time_t as_utc = timegm(&copy);
  std::tm normalized{};
  gmtime_r(&as_utc, &normalized);
  t.tm_wday = normalized.tm_wday;
  t.tm_yday = normalized.tm_yday;
  return [t] { return t; };
}

}  // namespace chorus::chat
