#include "ui/user_prompts.h"

#include <QInputDialog>
#include <QMessageBox>

namespace chorus::ui {

void DialogPrompts::showError(const QString& title, const QString& message) {
  auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, parent_);
  box->setObjectName("errorDialog");
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setTextInteractionFlags(Qt::TextSelectableByMouse);
  box->open();  // window-modal but non-blocking: streaming in other tabs keeps going
}

bool DialogPrompts::confirm(const QString& title, const QString& question) {
  return QMessageBox::question(parent_, title, question, QMessageBox::Yes | QMessageBox::Cancel,
                               QMessageBox::Cancel) == QMessageBox::Yes;
}

std::optional<QString> DialogPrompts::askText(const QString& title, const QString& label,
                                              const QString& initial) {
  bool ok = false;
  const QString text = QInputDialog::getText(parent_, title, label, QLineEdit::Normal, initial, &ok);
  if (!ok) return std::nullopt;
  return text;
}

}  // namespace chorus::ui
