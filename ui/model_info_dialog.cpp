#include "ui/model_info_dialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>
#include <map>

#include "engine/gguf/gguf_reader.h"
#include "engine/quant/tensor_type.h"

namespace chorus::ui {
namespace {

QTableWidget* makeTable(QWidget* parent, const QStringList& headers) {
  auto* t = new QTableWidget(0, int(headers.size()), parent);
  t->setHorizontalHeaderLabels(headers);
  t->verticalHeader()->hide();
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setWordWrap(false);
  return t;
}

void addRow(QTableWidget* t, const QStringList& cells) {
  const int r = t->rowCount();
  t->insertRow(r);
  for (int c = 0; c < cells.size(); ++c) t->setItem(r, c, new QTableWidgetItem(cells[c]));
}

QWidget* metadataTable(const gguf::Reader& reader, QWidget* parent) {
  auto* t = makeTable(parent, {QObject::tr("Key"), QObject::tr("Type"), QObject::tr("Value")});
  for (const std::string& key : reader.metadata_keys()) {
    const gguf::Value* v = reader.find(key);
    if (!v) continue;
    QString type = gguf::value_type_name(v->type);
    if (v->type == gguf::ValueType::ARRAY)
      type = QString("%1[%2]").arg(gguf::value_type_name(v->elem_type)).arg(v->array.size());
    addRow(t, {QString::fromStdString(key), type,
               QString::fromStdString(v->to_display_string(8)).left(400)});
  }
  t->resizeColumnsToContents();
  return t;
}

QWidget* tensorTable(const gguf::Reader& reader, QWidget* parent) {
  auto* t = makeTable(parent, {QObject::tr("Tensor"), QObject::tr("Type"), QObject::tr("Shape"),
                               QObject::tr("Size")});
  const QLocale locale;
  for (const gguf::TensorInfo& ti : reader.tensors())
    addRow(t, {QString::fromStdString(ti.name), QString::fromStdString(tensor_type_name(ti.type_id)),
               QString::fromStdString(ti.shape_string()),
               locale.formattedDataSize(qint64(ti.size_bytes))});
  t->resizeColumnsToContents();
  return t;
}

QString summaryText(const gguf::Reader& reader, const QString& path) {
  struct Totals { int n = 0; size_t bytes = 0; };
  std::map<std::string, Totals> by_type;
  size_t total_bytes = 0;
  int64_t n_params = 0;
  for (const gguf::TensorInfo& ti : reader.tensors()) {
    Totals& tt = by_type[tensor_type_name(ti.type_id)];
    ++tt.n;
    tt.bytes += ti.size_bytes;
    total_bytes += ti.size_bytes;
    n_params += ti.n_elements();
  }
  const QLocale locale;
  QString s = QString("<b>%1</b><br>GGUF v%2 · %3 · architecture <b>%4</b> · name %5<br>"
                      "%6 tensors · %7 parameters · %8 of weights<br>")
                  .arg(path.toHtmlEscaped())
                  .arg(reader.version())
                  .arg(locale.formattedDataSize(qint64(reader.file_size_bytes())))
                  .arg(QString::fromStdString(reader.get_string_or("general.architecture", "?")))
                  .arg(QString::fromStdString(reader.get_string_or("general.name", "—")).toHtmlEscaped())
                  .arg(reader.tensors().size())
                  .arg(locale.toString(qlonglong(n_params)))
                  .arg(locale.formattedDataSize(qint64(total_bytes)));
  QStringList parts;
  for (const auto& [type, tt] : by_type)
    parts << QString("%1: %2 (%3)").arg(QString::fromStdString(type)).arg(tt.n)
                 .arg(locale.formattedDataSize(qint64(tt.bytes)));
  return s + QObject::tr("By type: ") + parts.join(" · ");
}

}  // namespace

ModelInfoDialog::ModelInfoDialog(const QString& model_path, QWidget* parent) : QDialog(parent) {
  setObjectName("modelInfoDialog");
  setWindowTitle(tr("Model information"));
  resize(820, 560);
  auto* layout = new QVBoxLayout(this);
  auto reader = gguf::Reader::open(model_path.toStdString());
  if (!reader.ok()) {
    error_ = QString::fromStdString(reader.message());
    auto* label = new QLabel(tr("Cannot read this model: %1").arg(error_), this);
    label->setWordWrap(true);
    layout->addWidget(label);
  } else {
    ok_ = true;
    auto* summary = new QLabel(summaryText(*reader, model_path), this);
    summary->setWordWrap(true);
    summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(summary);
    auto* tabs = new QTabWidget(this);
    tabs->addTab(metadataTable(*reader, tabs), tr("Metadata (%1)").arg(reader->metadata_keys().size()));
    tabs->addTab(tensorTable(*reader, tabs), tr("Tensors (%1)").arg(reader->tensors().size()));
    layout->addWidget(tabs, 1);
  }
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
}

}  // namespace chorus::ui
