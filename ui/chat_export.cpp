#include "ui/chat_export.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace chorus::ui {

QString exportMarkdown(const Conversation& c) {
  QString out = "# " + c.title + "\n\n";
  if (!c.settings.system_prompt.isEmpty())
    out += "> **System:** " + QString(c.settings.system_prompt).replace("\n", "\n> ") + "\n\n";
  for (const Message& m : c.messages) {
    out += m.role == Role::User ? "## You\n\n" : "## Assistant\n\n";
    out += m.content + "\n\n";
    if (m.state != MessageState::Complete && !m.note.isEmpty()) out += "*(" + m.note + ")*\n\n";
  }
  return out;
}

QByteArray exportJson(const Conversation& c) {
  QJsonArray messages;
  for (const Message& m : c.messages) {
    QJsonObject o;
    o["role"] = roleName(m.role);
    o["content"] = m.content;
    if (m.state != MessageState::Complete) o["state"] = stateCode(m.state);
    if (!m.note.isEmpty()) o["note"] = m.note;
    messages.append(o);
  }
  QJsonObject root;
  root["format"] = "chorus-chat";
  root["version"] = 1;
  root["title"] = c.title;
  root["settings"] = c.settings.toJson();
  root["messages"] = messages;
  return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

}  // namespace chorus::ui
