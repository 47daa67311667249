#include "ui/conversation.h"

#include <algorithm>
#include <cmath>

namespace chorus::ui {
namespace {

double readNumber(const QJsonObject& o, const char* key, double fallback, double lo, double hi) {
  const QJsonValue v = o.value(QLatin1String(key));
  if (!v.isDouble()) return fallback;
  const double x = v.toDouble();
  return std::isfinite(x) && x >= lo && x <= hi ? x : fallback;
}

}  // namespace

QJsonObject ChatSettings::toJson() const {
  QJsonObject o;
  o["system_prompt"] = system_prompt;
  o["temperature"] = temperature;
  o["top_k"] = top_k;
  o["top_p"] = top_p;
  o["min_p"] = min_p;
  o["repeat_penalty"] = repeat_penalty;
  o["seed"] = double(seed);
  o["max_tokens"] = max_tokens;
  return o;
}

ChatSettings ChatSettings::fromJson(const QJsonObject& o) {
  ChatSettings s;
  if (o.value("system_prompt").isString()) s.system_prompt = o.value("system_prompt").toString();
  s.temperature = readNumber(o, "temperature", s.temperature, 0.0, 10.0);
  s.top_k = int(readNumber(o, "top_k", s.top_k, 0, 100000));
  s.top_p = readNumber(o, "top_p", s.top_p, 0.0, 1.0);
  s.min_p = readNumber(o, "min_p", s.min_p, 0.0, 1.0);
  s.repeat_penalty = readNumber(o, "repeat_penalty", s.repeat_penalty, 0.0, 10.0);
  s.seed = qint64(readNumber(o, "seed", 0, 0, 9007199254740991.0));  // 2^53 - 1: exact in JSON
  s.max_tokens = int(readNumber(o, "max_tokens", s.max_tokens, 1, 1 << 20));
  return s;
}

QString roleName(Role role) { return role == Role::User ? "user" : "assistant"; }
Role roleFromName(const QString& name) { return name == "user" ? Role::User : Role::Assistant; }

int stateCode(MessageState state) { return static_cast<int>(state); }
MessageState stateFromCode(int code) {
  if (code < 0 || code > static_cast<int>(MessageState::Failed)) return MessageState::Complete;
  return static_cast<MessageState>(code);
}

Request buildRequest(const ChatSettings& settings, const QVector<Message>& messages) {
  Request r;
  if (!settings.system_prompt.trimmed().isEmpty())
    r.messages.push_back({"system", settings.system_prompt.toStdString()});
  for (const Message& m : messages) {
    if (m.role == Role::Assistant && (m.content.isEmpty() || m.state == MessageState::Failed))
      continue;
    r.messages.push_back({roleName(m.role).toStdString(), m.content.toStdString()});
  }
  r.sampling.temperature = float(settings.temperature);
  r.sampling.top_k = settings.top_k;
  r.sampling.top_p = float(settings.top_p);
  r.sampling.min_p = float(settings.min_p);
  r.sampling.repeat_penalty = float(settings.repeat_penalty);
  r.sampling.seed = static_cast<uint64_t>(std::max<qint64>(0, settings.seed));
  r.max_tokens = settings.max_tokens;
  return r;
}

}  // namespace chorus::ui
