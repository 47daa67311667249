#pragma once
// The scrolling list of a conversation's messages. It follows the bottom while a reply
// streams, unless the user has scrolled up to read.
#include <QScrollArea>
#include <QVector>

#include "ui/conversation.h"

class QVBoxLayout;

namespace chorus::ui {

class MessageWidget;

class MessageView : public QScrollArea {
  Q_OBJECT
 public:
  explicit MessageView(QWidget* parent = nullptr);

  void setMessages(const QVector<Message>& messages);
  void updateMessage(int index, const Message& message);  // appends when index == count()
  int count() const { return int(widgets_.size()); }
  MessageWidget* messageWidget(int index) const { return widgets_.value(index); }
  // Markdown re-renders so far (the coalescing tests count repaint work with it).
  int64_t renderCount() const { return n_renders_; }

 Q_SIGNALS:
  void editRequested(int index);

 private:
  void scrollToBottomSoon();

  QWidget* container_;
  QVBoxLayout* layout_;
  QVector<MessageWidget*> widgets_;
  int64_t n_renders_ = 0;
};

}  // namespace chorus::ui
