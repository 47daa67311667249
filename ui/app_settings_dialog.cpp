#include "ui/app_settings_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include <QThread>

namespace chorus::ui {

AppSettingsDialog::AppSettingsDialog(const AppSettings& settings, QWidget* parent)
    : QDialog(parent), base_(settings) {
  setWindowTitle(tr("Chorus settings"));
  auto* form = new QFormLayout(this);
  backend_ = new QComboBox(this);
  backend_->addItem(tr("Automatic (CUDA when available)"), "auto");
  backend_->addItem(tr("CPU"), "cpu");
  backend_->addItem(tr("CUDA (NVIDIA GPU)"), "cuda");
  backend_->setCurrentIndex(std::max(0, backend_->findData(settings.backend)));
  form->addRow(tr("Backend"), backend_);
  threads_ = new QSpinBox(this);
  threads_->setRange(0, 1024);
  threads_->setSpecialValueText(tr("All cores (%1)").arg(QThread::idealThreadCount()));
  threads_->setValue(settings.cpu_threads);
  form->addRow(tr("CPU threads"), threads_);
  context_ = new QSpinBox(this);
  context_->setRange(256, 1 << 20);
  context_->setSingleStep(1024);
  context_->setSuffix(tr(" tokens"));
  context_->setValue(settings.context_tokens);
  form->addRow(tr("Context size"), context_);
  form->addRow(new QLabel(tr("<i>Backend, threads and context apply when a model is loaded.</i>"), this));
  theme_ = new QComboBox(this);
  theme_->addItem(tr("Light"), "light");
  theme_->addItem(tr("Dark"), "dark");
  theme_->setCurrentIndex(settings.theme == Theme::Dark ? 1 : 0);
  form->addRow(tr("Theme"), theme_);
  font_size_ = new QSpinBox(this);
  font_size_->setRange(6, 48);
  font_size_->setSuffix(tr(" pt"));
  font_size_->setValue(settings.font_point_size);
  form->addRow(tr("Font size"), font_size_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  form->addRow(buttons);
}

AppSettings AppSettingsDialog::settings() const {
  AppSettings s = base_;
  s.backend = backend_->currentData().toString();
  s.cpu_threads = threads_->value();
  s.context_tokens = context_->value();
  s.theme = theme_->currentData().toString() == "dark" ? Theme::Dark : Theme::Light;
  s.font_point_size = font_size_->value();
  return s;
}

}  // namespace chorus::ui
