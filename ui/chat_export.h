#pragma once
// A conversation as a Markdown transcript or as JSON (settings included, for re-import or
// scripting).
#include <QByteArray>
#include <QString>

#include "ui/conversation.h"

namespace chorus::ui {

QString exportMarkdown(const Conversation& c);
QByteArray exportJson(const Conversation& c);

}  // namespace chorus::ui
