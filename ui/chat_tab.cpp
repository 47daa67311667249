#include "ui/chat_tab.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QShowEvent>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/chat_input.h"
#include "ui/chat_settings_dialog.h"
#include "ui/chat_store.h"
#include "ui/engine_bridge.h"
#include "ui/message_view.h"
#include "ui/user_prompts.h"

namespace chorus::ui {

QString defaultChatTitle() { return QObject::tr("New chat"); }

ChatTab::ChatTab(Conversation conversation, EngineBridge& bridge, ChatStore& store,
                 UserPrompts& prompts, QWidget* parent)
    : QWidget(parent), conv_(std::move(conversation)), bridge_(bridge), store_(store),
      prompts_(prompts) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 6);
  view_ = new MessageView(this);
  layout->addWidget(view_, 1);
  edit_banner_ = new QLabel(this);
  edit_banner_->setObjectName("editBanner");
  edit_banner_->setWordWrap(true);
  edit_banner_->setStyleSheet("QLabel { background: #f0ad4e; color: black; padding: 4px; }");
  edit_banner_->hide();
  layout->addWidget(edit_banner_);
  auto* row = new QHBoxLayout;
  row->setContentsMargins(8, 0, 8, 0);
  input_ = new ChatInput(this);
  row->addWidget(input_, 1);
  auto* buttons = new QVBoxLayout;
  send_ = new QPushButton(tr("Send"), this);
  stop_ = new QPushButton(tr("Stop"), this);
  regenerate_ = new QPushButton(tr("Regenerate"), this);
  regenerate_->setToolTip(tr("Discard the last reply and generate it again"));
  auto* settings = new QPushButton(tr("Settings…"), this);
  settings->setToolTip(tr("System prompt and sampling settings of this chat"));
  for (QPushButton* b : {send_, stop_, regenerate_, settings}) buttons->addWidget(b);
  row->addLayout(buttons);
  layout->addLayout(row);

  connect(input_, &ChatInput::submitRequested, this, &ChatTab::submitInput);
  connect(send_, &QPushButton::clicked, this, &ChatTab::submitInput);
  connect(stop_, &QPushButton::clicked, this, &ChatTab::stop);
  connect(regenerate_, &QPushButton::clicked, this, &ChatTab::regenerate);
  connect(settings, &QPushButton::clicked, this, &ChatTab::openSettingsDialog);
  connect(view_, &MessageView::editRequested, this, &ChatTab::beginEdit);
  connect(&bridge_, &EngineBridge::textArrived, this, &ChatTab::onText);
  connect(&bridge_, &EngineBridge::requestFinished, this, &ChatTab::onFinished);
  connect(&bridge_, &EngineBridge::requestFailed, this, &ChatTab::onFailed);
  view_->setMessages(conv_.messages);
  render_timer_.setSingleShot(true);
  connect(&render_timer_, &QTimer::timeout, this, &ChatTab::renderStreaming);
  since_render_.start();
  refreshControls();
}

ChatTab::~ChatTab() {
  // The window may be half torn down: nobody must hear from a dying tab.
  blockSignals(true);
  detachRequest();
}

void ChatTab::setTitle(const QString& title) {
  const QString t = title.trimmed().isEmpty() ? defaultChatTitle() : title.trimmed();
  if (t == conv_.title) return;
  conv_.title = t;
  store_.setTitle(conv_.id, t);
  Q_EMIT titleChanged(t);
}

void ChatTab::setSettings(const ChatSettings& settings) {
  conv_.settings = settings;
  store_.setSettings(conv_.id, settings);
}

void ChatTab::openSettingsDialog() {
  auto* dialog = new ChatSettingsDialog(conv_.settings, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->setWindowTitle(tr("Settings — %1").arg(conv_.title));
  connect(dialog, &ChatSettingsDialog::settingsAccepted, this, &ChatTab::setSettings);
  dialog->open();
}

void ChatTab::updateSpeed(const RequestStats& stats) {
  speed_.decode_tok_per_s = stats.decode_tok_per_s;
  speed_.ttft_ms = stats.t_first_token_us / 1000.0;
  speed_.n_generated = stats.n_generated_tokens;
}

int ChatTab::appendMessage(Message m) {
  const int index = int(conv_.messages.size());
  m.id = store_.addMessage(conv_.id, index, m);
  conv_.messages.push_back(m);
  view_->updateMessage(index, m);
  return index;
}

void ChatTab::submitInput() {
  const QString text = input_->toPlainText();
  if (text.trimmed().isEmpty()) return;
  const bool ok = edit_index_ >= 0 ? editAndResend(edit_index_, text) : send(text);
  if (ok) input_->clear();
}

bool ChatTab::ensureModelReady() {
  if (bridge_.isModelReady()) return true;
  prompts_.showError(tr("No model loaded"),
                     bridge_.isLoading() ? tr("The model is still loading; send again when it is ready.")
                                         : tr("Open a model first (File → Open model…)."));
  return false;
}

bool ChatTab::send(const QString& text) {
  if (isStreaming() || text.trimmed().isEmpty()) return false;
  if (!ensureModelReady()) return false;
  if (conv_.title == defaultChatTitle() && conv_.messages.isEmpty())
    setTitle(text.simplified().left(32));
  appendMessage({0, Role::User, text, MessageState::Complete, {}});
  return startReply();
}

bool ChatTab::startReply() {
  Q_ASSERT(!conv_.messages.isEmpty() && conv_.messages.last().role == Role::User);
  Request request = buildRequest(conv_.settings, conv_.messages);
  streaming_index_ = appendMessage({0, Role::Assistant, {}, MessageState::Streaming, {}});
  speed_ = {};
  request_ = bridge_.submit(std::move(request));
  refreshControls();
  Q_EMIT streamingChanged(true);
  return true;
}

void ChatTab::stop() {
  if (isStreaming()) bridge_.cancel(request_);  // the Cancelled finish closes the message
}

void ChatTab::detachRequest() {
  if (!isStreaming()) return;
  bridge_.cancel(request_);
  request_ = 0;
  if (streaming_index_ >= 0 && streaming_index_ < conv_.messages.size()) {
    Message& m = conv_.messages[streaming_index_];
    m.state = MessageState::Stopped;
    m.note = finishReasonText(FinishReason::Cancelled);
    store_.updateMessage(m);
  }
  streaming_index_ = -1;
  refreshControls();
  Q_EMIT streamingChanged(false);
}

bool ChatTab::regenerate() {
  if (isStreaming() || conv_.messages.isEmpty()) return false;
  if (!ensureModelReady()) return false;
  if (conv_.messages.last().role == Role::Assistant) {
    const int index = int(conv_.messages.size()) - 1;
    store_.deleteMessagesFrom(conv_.id, index);
    conv_.messages.removeLast();
    view_->setMessages(conv_.messages);
  }
  if (conv_.messages.isEmpty() || conv_.messages.last().role != Role::User) return false;
  return startReply();
}

bool ChatTab::editAndResend(int index, const QString& text) {
  if (index < 0 || index >= conv_.messages.size() || conv_.messages[index].role != Role::User ||
      text.trimmed().isEmpty())
    return false;
  const int n_later = int(conv_.messages.size()) - index - 1;
  if (n_later > 0 &&
      !prompts_.confirm(tr("Edit and resend"),
                        tr("Resending this message discards the %n later message(s) of this chat. "
                           "Continue?", nullptr, n_later)))
    return false;
  if (!ensureModelReady()) return false;
  detachRequest();
  store_.deleteMessagesFrom(conv_.id, index + 1);
  conv_.messages.resize(index + 1);
  conv_.messages[index].content = text;
  store_.updateMessage(conv_.messages[index]);
  view_->setMessages(conv_.messages);
  endEdit();
  return startReply();
}

void ChatTab::beginEdit(int index) {
  if (index < 0 || index >= conv_.messages.size()) return;
  edit_index_ = index;
  const int n_later = int(conv_.messages.size()) - index - 1;
  edit_banner_->setText(
      tr("Editing message %1. Sending replaces it and discards the %n later message(s). "
         "Press Escape or clear the box to cancel.", nullptr, n_later).arg(index + 1));
  edit_banner_->show();
  input_->setPlainText(conv_.messages[index].content);
  input_->setFocus();
  connect(input_, &QPlainTextEdit::textChanged, this, &ChatTab::endEditIfCleared,
          Qt::UniqueConnection);
}

void ChatTab::endEditIfCleared() {
  if (input_->toPlainText().isEmpty()) endEdit();
}

void ChatTab::endEdit() {
  edit_index_ = -1;
  edit_banner_->hide();
}

void ChatTab::onText(quint64 id, const QString& text) {
  if (id != request_ || streaming_index_ < 0) return;
  Message& m = conv_.messages[streaming_index_];
  m.content += text;
  store_.updateStreamingContent(m.id, m.content);
  view_stale_ = true;
  if (isVisible() && !render_timer_.isActive()) {
    // Re-rendering Markdown costs more as a reply grows; keep it under ~1/3 of the GUI
    // thread by waiting at least twice as long as the last render took (and >= 16 ms).
    const qint64 wait_ms = std::max<qint64>(16, 2 * last_render_ms_) - since_render_.elapsed();
    if (wait_ms <= 0) renderStreaming();
    else render_timer_.start(int(wait_ms));
  }
  Q_EMIT textActivity();
}

void ChatTab::renderStreaming() {
  if (!view_stale_ || streaming_index_ < 0) return;
  QElapsedTimer cost;
  cost.start();
  view_->updateMessage(streaming_index_, conv_.messages[streaming_index_]);
  last_render_ms_ = cost.elapsed();
  since_render_.restart();
  view_stale_ = false;
}

void ChatTab::onFailed(quint64 id, const QString& message) {
  if (id != request_ || streaming_index_ < 0) return;
  Message& m = conv_.messages[streaming_index_];
  m.state = MessageState::Failed;
  m.note = tr("Error: %1").arg(message);
}

void ChatTab::onFinished(quint64 id, FinishReason reason, const RequestStats& stats) {
  if (id != request_ || streaming_index_ < 0) return;
  Message& m = conv_.messages[streaming_index_];
  updateSpeed(stats);
  if (reason == FinishReason::ContextFull && stats.n_generated_tokens == 0) {
    // The engine ends a prompt that fills the context before it generates anything; "context
    // full · 0 tokens" would leave the user guessing what to do.
    m.state = MessageState::Failed;
    m.note = tr("This conversation (%1 tokens) no longer fits the model's context: start a new "
                "chat, or raise Context size in Settings (up to what the model supports) and "
                "reload the model.")
                 .arg(stats.n_prompt_tokens);
  } else if (m.state != MessageState::Failed) {
    m.state = reason == FinishReason::Cancelled ? MessageState::Stopped
              : reason == FinishReason::Error   ? MessageState::Failed
                                                : MessageState::Complete;
    m.note = tr("%1 · %2 tokens · %3 tok/s · first token %4 ms")
                 .arg(finishReasonText(reason))
                 .arg(stats.n_generated_tokens)
                 .arg(stats.decode_tok_per_s, 0, 'f', 1)
                 .arg(stats.t_first_token_us / 1000.0, 0, 'f', 0);
  }
  store_.updateMessage(m);
  render_timer_.stop();
  view_->updateMessage(streaming_index_, m);
  view_stale_ = false;
  request_ = 0;
  streaming_index_ = -1;
  refreshControls();
  Q_EMIT streamingChanged(false);
}

void ChatTab::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  renderStreaming();
}

void ChatTab::refreshControls() {
  send_->setEnabled(!isStreaming());
  stop_->setEnabled(isStreaming());
  regenerate_->setEnabled(!isStreaming() && !conv_.messages.isEmpty());
}

}  // namespace chorus::ui
