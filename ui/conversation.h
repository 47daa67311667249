#pragma once
// A conversation as the UI and the store see it: plain values, no widgets.
#include <QJsonObject>
#include <QString>
#include <QVector>

#include "engine/sched/engine_api.h"

namespace chorus::ui {

enum class Role { User, Assistant };
// Streaming: being written now. Interrupted: the app died while it streamed (found at
// startup). Stopped/Failed: the user pressed Stop, or the engine reported an error.
enum class MessageState { Complete, Streaming, Stopped, Interrupted, Failed };

struct Message {
  qint64 id = 0;  // row id in the store; 0 before it is stored
  Role role = Role::User;
  QString content;
  MessageState state = MessageState::Complete;
  QString note;  // footer text: finish reason, error message, speed
};

// Per-conversation generation settings. Kept as JSON in the store so that adding a field
// needs no schema migration; missing or malformed fields read as their defaults.
struct ChatSettings {
  QString system_prompt;
  double temperature = 0.7;
  int top_k = 40;
  double top_p = 0.95;
  double min_p = 0.05;
  double repeat_penalty = 1.1;
  qint64 seed = 0;
  int max_tokens = 512;

  QJsonObject toJson() const;
  static ChatSettings fromJson(const QJsonObject& json);
  bool operator==(const ChatSettings&) const = default;
};

struct Conversation {
  qint64 id = 0;
  QString title;
  ChatSettings settings;
  QVector<Message> messages;
};

QString roleName(Role role);        // "user" / "assistant" (store and export)
Role roleFromName(const QString& name);
int stateCode(MessageState state);  // stable integers for the store
MessageState stateFromCode(int code);

// The engine request for generating the next assistant reply after `messages`: the system
// prompt first, then every user and finished assistant turn (empty or failed replies skipped).
Request buildRequest(const ChatSettings& settings, const QVector<Message>& messages);

}  // namespace chorus::ui
