#include "ui/chat_settings_dialog.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <limits>

namespace chorus::ui {
namespace {

QDoubleSpinBox* makeDouble(QWidget* parent, double lo, double hi, double step, int decimals,
                           const QString& tip) {
  auto* s = new QDoubleSpinBox(parent);
  s->setRange(lo, hi);
  s->setSingleStep(step);
  s->setDecimals(decimals);
  s->setToolTip(tip);
  return s;
}

QSpinBox* makeInt(QWidget* parent, int lo, int hi, const QString& tip) {
  auto* s = new QSpinBox(parent);
  s->setRange(lo, hi);
  s->setToolTip(tip);
  return s;
}

}  // namespace

ChatSettingsDialog::ChatSettingsDialog(const ChatSettings& settings, QWidget* parent)
    : QDialog(parent) {
  setObjectName("chatSettingsDialog");
  auto* form = new QFormLayout(this);
  system_prompt_ = new QPlainTextEdit(this);
  system_prompt_->setPlaceholderText(tr("Optional instructions sent before the conversation"));
  system_prompt_->setMinimumHeight(80);
  form->addRow(tr("System prompt"), system_prompt_);
  temperature_ = makeDouble(this, 0.0, 5.0, 0.05, 2, tr("0 picks the most likely token (greedy)"));
  form->addRow(tr("Temperature"), temperature_);
  top_k_ = makeInt(this, 0, 100000, tr("Sample among the k most likely tokens; 0 turns it off"));
  form->addRow(tr("Top-k"), top_k_);
  top_p_ = makeDouble(this, 0.0, 1.0, 0.01, 2, tr("Nucleus sampling; 1 turns it off"));
  form->addRow(tr("Top-p"), top_p_);
  min_p_ = makeDouble(this, 0.0, 1.0, 0.01, 2,
                      tr("Drop tokens less likely than min-p × the best; 0 turns it off"));
  form->addRow(tr("Min-p"), min_p_);
  repeat_penalty_ = makeDouble(this, 0.0, 5.0, 0.05, 2, tr("1 turns it off"));
  form->addRow(tr("Repeat penalty"), repeat_penalty_);
  seed_ = makeInt(this, 0, std::numeric_limits<int>::max(),
                  tr("Same seed and settings give the same reply"));
  form->addRow(tr("Seed"), seed_);
  max_tokens_ = makeInt(this, 1, 1 << 20, tr("Longest reply, in tokens"));
  form->addRow(tr("Max tokens"), max_tokens_);
  auto* buttons = new QDialogButtonBox(
      QDialogButtonBox::Ok | QDialogButtonBox::Cancel | QDialogButtonBox::RestoreDefaults, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(buttons->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this,
          [this] { setSettings(ChatSettings{}); });
  form->addRow(buttons);
  connect(this, &QDialog::accepted, this, [this] { Q_EMIT settingsAccepted(this->settings()); });
  setSettings(settings);
}

void ChatSettingsDialog::setSettings(const ChatSettings& s) {
  system_prompt_->setPlainText(s.system_prompt);
  temperature_->setValue(s.temperature);
  top_k_->setValue(s.top_k);
  top_p_->setValue(s.top_p);
  min_p_->setValue(s.min_p);
  repeat_penalty_->setValue(s.repeat_penalty);
  seed_->setValue(int(std::min<qint64>(s.seed, std::numeric_limits<int>::max())));
  max_tokens_->setValue(s.max_tokens);
}

ChatSettings ChatSettingsDialog::settings() const {
  ChatSettings s;
  s.system_prompt = system_prompt_->toPlainText();
  s.temperature = temperature_->value();
  s.top_k = top_k_->value();
  s.top_p = top_p_->value();
  s.min_p = min_p_->value();
  s.repeat_penalty = repeat_penalty_->value();
  s.seed = seed_->value();
  s.max_tokens = max_tokens_->value();
  return s;
}

}  // namespace chorus::ui
