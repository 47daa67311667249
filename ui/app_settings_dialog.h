#pragma once
// Application settings: engine backend, CPU threads and context size (used at the next
// model load), theme and font size (applied at once).
#include <QDialog>

#include "ui/app_settings.h"

class QComboBox;
class QSpinBox;

namespace chorus::ui {

class AppSettingsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit AppSettingsDialog(const AppSettings& settings, QWidget* parent = nullptr);
  AppSettings settings() const;  // the edited values on top of those passed in

 private:
  AppSettings base_;
  QComboBox* backend_;
  QSpinBox* threads_;
  QSpinBox* context_;
  QComboBox* theme_;
  QSpinBox* font_size_;
};

}  // namespace chorus::ui
