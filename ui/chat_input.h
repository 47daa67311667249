#pragma once
// The message box: Enter sends, Shift+Enter inserts a newline.
#include <QPlainTextEdit>

namespace chorus::ui {

class ChatInput : public QPlainTextEdit {
  Q_OBJECT
 public:
  explicit ChatInput(QWidget* parent = nullptr);

 Q_SIGNALS:
  void submitRequested();

 protected:
  void keyPressEvent(QKeyEvent* event) override;
};

}  // namespace chorus::ui
