#pragma once
// Per-chat settings: system prompt and sampling. Opened non-modally per tab; Accept emits
// the edited settings, which the tab stores and uses for its next request.
#include <QDialog>

#include "ui/conversation.h"

class QDoubleSpinBox;
class QPlainTextEdit;
class QSpinBox;

namespace chorus::ui {

class ChatSettingsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ChatSettingsDialog(const ChatSettings& settings, QWidget* parent = nullptr);
  ChatSettings settings() const;
  void setSettings(const ChatSettings& s);

 Q_SIGNALS:
  void settingsAccepted(const chorus::ui::ChatSettings& settings);

 private:
  QPlainTextEdit* system_prompt_;
  QDoubleSpinBox* temperature_;
  QSpinBox* top_k_;
  QDoubleSpinBox* top_p_;
  QDoubleSpinBox* min_p_;
  QDoubleSpinBox* repeat_penalty_;
  QSpinBox* seed_;
  QSpinBox* max_tokens_;
};

}  // namespace chorus::ui
