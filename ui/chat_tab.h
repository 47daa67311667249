#pragma once
// One conversation tab: its messages, the input box, and the life of its generation
// requests. A tab keeps streaming while hidden; it then only updates its model and the
// store, and re-renders once when it is shown again.
#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

#include "ui/conversation.h"

class QLabel;
class QPushButton;

namespace chorus::ui {

class ChatInput;
class ChatStore;
class EngineBridge;
class MessageView;
class UserPrompts;

// The last known speed of a tab's reply, for the perf panel.
struct TabSpeed {
  double decode_tok_per_s = 0.0;
  double ttft_ms = 0.0;
  int32_t n_generated = 0;
};

class ChatTab : public QWidget {
  Q_OBJECT
 public:
  ChatTab(Conversation conversation, EngineBridge& bridge, ChatStore& store,
          UserPrompts& prompts, QWidget* parent = nullptr);
  ~ChatTab() override;

  const Conversation& conversation() const { return conv_; }
  qint64 conversationId() const { return conv_.id; }
  QString title() const { return conv_.title; }
  void setTitle(const QString& title);
  const ChatSettings& settings() const { return conv_.settings; }
  void setSettings(const ChatSettings& settings);

  bool isStreaming() const { return request_ != 0; }
  RequestId currentRequest() const { return request_; }
  const TabSpeed& speed() const { return speed_; }
  void updateSpeed(const RequestStats& stats);

  // Each returns false (and says why through UserPrompts where the user needs to know)
  // when it cannot act now.
  bool send(const QString& text);
  void stop();
  bool regenerate();
  // Replaces user message `index`, discards every later message (after confirming when
  // there are any) and generates a new reply.
  bool editAndResend(int index, const QString& text);
  void beginEdit(int index);  // puts the message into the input box, with a banner

  MessageView* view() const { return view_; }
  ChatInput* input() const { return input_; }
  void openSettingsDialog();

 Q_SIGNALS:
  void streamingChanged(bool streaming);
  void textActivity();  // text arrived (the window marks background tabs)
  void titleChanged(const QString& title);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void onText(quint64 id, const QString& text);
  void onFinished(quint64 id, FinishReason reason, const RequestStats& stats);
  void onFailed(quint64 id, const QString& message);
  void submitInput();
  bool startReply();
  bool ensureModelReady();  // tells the user when not
  void detachRequest();  // cancels the running request and stops listening to it
  int appendMessage(Message m);
  void refreshControls();
  void endEdit();
  void renderStreaming();  // draws the streaming reply when it has new text
  void endEditIfCleared();

  Conversation conv_;
  EngineBridge& bridge_;
  ChatStore& store_;
  UserPrompts& prompts_;
  RequestId request_ = 0;
  int streaming_index_ = -1;
  int edit_index_ = -1;
  bool view_stale_ = false;  // the streaming reply has text not rendered yet
  QTimer render_timer_;
  QElapsedTimer since_render_;
  qint64 last_render_ms_ = 0;
  TabSpeed speed_;
  MessageView* view_;
  ChatInput* input_;
  QLabel* edit_banner_;
  QPushButton* send_;
  QPushButton* stop_;
  QPushButton* regenerate_;
};

// Default title of a chat that has not been named yet.
QString defaultChatTitle();

}  // namespace chorus::ui
