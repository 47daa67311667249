#include "ui/chat_input.h"

#include <QKeyEvent>

namespace chorus::ui {

ChatInput::ChatInput(QWidget* parent) : QPlainTextEdit(parent) {
  setPlaceholderText(tr("Message  (Enter sends, Shift+Enter for a new line)"));
  setTabChangesFocus(true);
  setMaximumHeight(120);
  setMinimumHeight(56);
}

void ChatInput::keyPressEvent(QKeyEvent* event) {
  const bool enter = event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter;
  if (enter && !(event->modifiers() & Qt::ShiftModifier)) {
    Q_EMIT submitRequested();
    return;
  }
  if (enter) {  // Shift+Enter: a plain newline, not a paragraph separator
    insertPlainText("\n");
    return;
  }
  QPlainTextEdit::keyPressEvent(event);
}

}  // namespace chorus::ui
