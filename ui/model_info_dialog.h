#pragma once
// What is inside a GGUF file: its metadata and a summary of its tensor table (count and
// bytes per tensor type, then every tensor with type and shape). Read with the engine's
// own GGUF reader, so what it shows is what the engine will see.
#include <QDialog>

namespace chorus::ui {

class ModelInfoDialog : public QDialog {
  Q_OBJECT
 public:
  // On a file the reader rejects, the dialog shows the reader's error instead of tables.
  explicit ModelInfoDialog(const QString& model_path, QWidget* parent = nullptr);
  bool loadedOk() const { return ok_; }
  QString errorText() const { return error_; }

 private:
  bool ok_ = false;
  QString error_;
};

}  // namespace chorus::ui
