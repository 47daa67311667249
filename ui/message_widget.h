#pragma once
// One chat message: a header (who, state), the Markdown body sized to its content, a
// footer note (finish reason, speed, error), and actions: copy the message, copy its code,
// edit and resend (user messages).
#include <QFrame>
#include <QTextBrowser>

#include "ui/conversation.h"

class QLabel;
class QToolButton;

namespace chorus::ui {

// A QTextBrowser that is exactly as tall as its document, so messages stack in a scroll
// area, with a context action to copy the code block under the cursor.
class MarkdownBrowser : public QTextBrowser {
  Q_OBJECT
 public:
  explicit MarkdownBrowser(QWidget* parent = nullptr);
  void setMarkdownText(const QString& markdown);
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  void fitHeight();
  int fitted_width_ = -1;
};

class MessageWidget : public QFrame {
  Q_OBJECT
 public:
  MessageWidget(int index, const Message& message, QWidget* parent = nullptr);
  void setMessage(const Message& message);
  int index() const { return index_; }
  const Message& message() const { return message_; }
  int renderCount() const { return n_renders_; }
  MarkdownBrowser* body() const { return body_; }

 Q_SIGNALS:
  void editRequested(int index);

 private:
  void copyMessage();
  void copyCode();

  int index_;
  Message message_;
  QLabel* who_;
  QLabel* note_;
  QToolButton* copy_code_;
  MarkdownBrowser* body_;
  int n_renders_ = 0;
};

}  // namespace chorus::ui
