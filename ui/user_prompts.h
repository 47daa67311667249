#pragma once
// How the UI tells the user about errors and asks for confirmation. Injected rather than
// calling QMessageBox directly, so tests can record errors and answer questions without a
// modal event loop; the dialog implementation opens error boxes non-blocking.
#include <QPointer>
#include <QString>
#include <QWidget>
#include <optional>

namespace chorus::ui {

class UserPrompts {
 public:
  virtual ~UserPrompts() = default;
  virtual void showError(const QString& title, const QString& message) = 0;  // returns at once
  virtual bool confirm(const QString& title, const QString& question) = 0;
  virtual std::optional<QString> askText(const QString& title, const QString& label,
                                         const QString& initial) = 0;
};

class DialogPrompts final : public UserPrompts {
 public:
  void setParentWidget(QWidget* parent) { parent_ = parent; }
  void showError(const QString& title, const QString& message) override;
  bool confirm(const QString& title, const QString& question) override;
  std::optional<QString> askText(const QString& title, const QString& label,
                                 const QString& initial) override;

 private:
  QPointer<QWidget> parent_;
};

}  // namespace chorus::ui
