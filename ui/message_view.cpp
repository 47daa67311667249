#include "ui/message_view.h"

#include <QScrollBar>
#include <QTimer>
#include <QVBoxLayout>

#include "ui/message_widget.h"

namespace chorus::ui {

MessageView::MessageView(QWidget* parent) : QScrollArea(parent) {
  setWidgetResizable(true);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setFrameShape(QFrame::NoFrame);
  container_ = new QWidget(this);
  container_->setObjectName("messageContainer");
  layout_ = new QVBoxLayout(container_);
  layout_->setContentsMargins(8, 8, 8, 8);
  layout_->setSpacing(8);
  layout_->addStretch(1);
  setWidget(container_);
}

void MessageView::setMessages(const QVector<Message>& messages) {
  for (MessageWidget* w : widgets_) w->deleteLater();
  widgets_.clear();
  for (int i = 0; i < messages.size(); ++i) updateMessage(i, messages[i]);
  scrollToBottomSoon();
}

void MessageView::updateMessage(int index, const Message& message) {
  QScrollBar* bar = verticalScrollBar();
  const bool at_bottom = bar->value() >= bar->maximum() - 4;
  if (index < widgets_.size()) {
    MessageWidget* w = widgets_[index];
    const int before = w->renderCount();
    w->setMessage(message);
    n_renders_ += w->renderCount() - before;
  } else {
    Q_ASSERT(index == widgets_.size());
    auto* w = new MessageWidget(index, message, container_);
    connect(w, &MessageWidget::editRequested, this, &MessageView::editRequested);
    layout_->insertWidget(layout_->count() - 1, w);  // before the stretch
    widgets_.push_back(w);
    ++n_renders_;
  }
  if (at_bottom) scrollToBottomSoon();
}

void MessageView::scrollToBottomSoon() {
  // The layout settles on the next event-loop turn; scrolling now would stop short.
  QTimer::singleShot(0, this, [this] { verticalScrollBar()->setValue(verticalScrollBar()->maximum()); });
}

}  // namespace chorus::ui
