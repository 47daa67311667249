#include "ui/message_widget.h"

#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QScrollBar>
#include <QTextBlock>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>
#include <memory>

#include "ui/markdown_render.h"

namespace chorus::ui {

MarkdownBrowser::MarkdownBrowser(QWidget* parent) : QTextBrowser(parent) {
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setFrameShape(QFrame::NoFrame);
  setOpenExternalLinks(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  viewport()->setAutoFillBackground(false);
  document()->setDocumentMargin(4);
}

void MarkdownBrowser::setMarkdownText(const QString& markdown) {
  renderMarkdown(*document(), markdown, palette());
  fitted_width_ = -1;
  fitHeight();
}

void MarkdownBrowser::fitHeight() {
  const int w = viewport()->width();
  if (w <= 0) return;
  document()->setTextWidth(w);
  fitted_width_ = w;
  const int h = int(std::ceil(document()->size().height())) + 2 * frameWidth();
  if (h != height()) setFixedHeight(h);
}

QSize MarkdownBrowser::sizeHint() const { return {200, height()}; }
QSize MarkdownBrowser::minimumSizeHint() const { return {50, height()}; }

void MarkdownBrowser::resizeEvent(QResizeEvent* event) {
  QTextBrowser::resizeEvent(event);
  if (viewport()->width() != fitted_width_) fitHeight();
}

void MarkdownBrowser::contextMenuEvent(QContextMenuEvent* event) {
  std::unique_ptr<QMenu> menu(createStandardContextMenu(event->pos()));
  const QTextBlock block = cursorForPosition(event->pos()).block();
  if (isCodeBlock(block)) {
    const QString code = codeBlockTextAt(block);
    QAction* copy = new QAction(tr("Copy code block"), menu.get());
    connect(copy, &QAction::triggered, [code] { QApplication::clipboard()->setText(code); });
    menu->insertAction(menu->actions().value(0), copy);
    menu->insertSeparator(menu->actions().value(1));
  }
  menu->exec(event->globalPos());
}

MessageWidget::MessageWidget(int index, const Message& message, QWidget* parent)
    : QFrame(parent), index_(index) {
  setObjectName("message");
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(10, 6, 10, 6);
  layout->setSpacing(2);
  auto* header = new QHBoxLayout;
  who_ = new QLabel(this);
  header->addWidget(who_);
  header->addStretch(1);
  auto addButton = [&](const QString& text, const QString& tip) {
    auto* b = new QToolButton(this);
    b->setText(text);
    b->setToolTip(tip);
    b->setAutoRaise(true);
    header->addWidget(b);
    return b;
  };
  connect(addButton(tr("Copy"), tr("Copy this message as Markdown")), &QToolButton::clicked,
          this, &MessageWidget::copyMessage);
  copy_code_ = addButton(tr("Copy code"), tr("Copy the code blocks of this message"));
  connect(copy_code_, &QToolButton::clicked, this, &MessageWidget::copyCode);
  if (message.role == Role::User) {
    connect(addButton(tr("Edit"), tr("Edit this message and resend it")), &QToolButton::clicked,
            this, [this] { Q_EMIT editRequested(index_); });
  }
  layout->addLayout(header);
  body_ = new MarkdownBrowser(this);
  layout->addWidget(body_);
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  layout->addWidget(note_);
  setMessage(message);
}

void MessageWidget::setMessage(const Message& message) {
  const bool user = message.role == Role::User;
  QString who = user ? tr("You") : tr("Assistant");
  if (message.state == MessageState::Streaming) who += QString::fromUtf8("  \u25CF ") + tr("streaming");
  who_->setText("<b>" + who.toHtmlEscaped() + "</b>");
  setProperty("role", user ? "user" : "assistant");
  if (message.content != message_.content || n_renders_ == 0) {
    body_->setMarkdownText(message.content);
    ++n_renders_;
  }
  const bool failed = message.state == MessageState::Failed ||
                      message.state == MessageState::Interrupted;
  note_->setText(message.note);
  note_->setVisible(!message.note.isEmpty());
  QPalette pal = note_->palette();
  const QColor text = palette().color(QPalette::WindowText), bg = palette().color(QPalette::Window);
  const QColor muted = QColor::fromRgbF(0.6 * text.redF() + 0.4 * bg.redF(),
                                        0.6 * text.greenF() + 0.4 * bg.greenF(),
                                        0.6 * text.blueF() + 0.4 * bg.blueF());
  pal.setColor(QPalette::WindowText, failed ? QColor(0xd9, 0x53, 0x4f) : muted);
  note_->setPalette(pal);
  copy_code_->setVisible(message.content.contains("```") || message.content.contains("~~~"));
  message_ = message;
}

void MessageWidget::copyMessage() { QApplication::clipboard()->setText(message_.content); }

void MessageWidget::copyCode() {
  QApplication::clipboard()->setText(extractCodeBlocks(message_.content).join("\n\n"));
}

}  // namespace chorus::ui
