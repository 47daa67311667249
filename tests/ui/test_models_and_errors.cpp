// Model loading from the window: busy indicator, failures shown as (non-blocking) dialogs,
// the recent-models list, model info from the GGUF reader, and the real engine when this
// build has one.
#include <QApplication>
#include <QDir>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QStatusBar>
#include <QTableWidget>
#include <QtTest>

#include "ui/model_info_dialog.h"
#include "ui_test_support.h"

using namespace chorus;
using namespace chorus::ui;
using namespace chorus::ui::test;

namespace {

QString peerDir() {
  const QString env = qEnvironmentVariable("CHORUS_PEER_DIR");
  return env.isEmpty() ? QDir::current().absoluteFilePath("../shared/peer") : env;
}

QMessageBox* visibleErrorBox() {
  for (QWidget* w : QApplication::topLevelWidgets())
    if (auto* box = qobject_cast<QMessageBox*>(w); box && box->isVisible()) return box;
  return nullptr;
}

}  // namespace

class TestModelsAndErrors : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void loadFailureShowsDialogWithoutBlocking();
  void missingDefaultModelIsExplained();
  void busyIndicatorWhileLoading();
  void recentModelsAreRemembered();
  void modelInfoReadsGguf();
  void modelInfoOnBadFileShowsError();
};

void TestModelsAndErrors::loadFailureShowsDialogWithoutBlocking() {
  AppFixture app;
  DialogPrompts dialogs;
  MainWindow& w = app.makeWindow(&dialogs);
  dialogs.setParentWidget(&w);
  QSignalSpy spy(&app.bridge, &EngineBridge::modelLoadFinished);
  QVERIFY(w.openModel("/nonexistent/broken.gguf"));
  QVERIFY(spy.wait(5000));  // returns: the dialog did not block the event loop
  QMessageBox* box = nullptr;
  QVERIFY(waitFor([&] { return (box = visibleErrorBox()) != nullptr; }, 2000));
  QCOMPARE(box->icon(), QMessageBox::Critical);
  QVERIFY2(box->text().contains("/nonexistent/broken.gguf"), qPrintable(box->text()));
  QVERIFY(box->text().contains("no such file"));
  box->accept();
  QVERIFY(waitFor([] { return visibleErrorBox() == nullptr; }, 2000));
  QVERIFY(!app.bridge.isModelReady());
}

void TestModelsAndErrors::missingDefaultModelIsExplained() {
  AppFixture app;
  MainWindowOptions o;
  o.model_override = "/no/such/model.gguf";
  MainWindow w(app.bridge, app.store, app.settings, app.prompts, o);
  w.restoreConversations();
  w.loadInitialModel();
  QCOMPARE(app.prompts.errors.size(), 1);
  QVERIFY(app.prompts.errors[0].contains("/no/such/model.gguf"));
  QVERIFY(!app.bridge.isLoading());
}

void TestModelsAndErrors::busyIndicatorWhileLoading() {
  AppFixture app({.load_delay_ms = 400});
  MainWindow& w = app.makeWindow();
  QProgressBar* busy = w.statusBar()->findChild<QProgressBar*>();
  QVERIFY(busy);
  QVERIFY(w.openModel({}));
  QVERIFY(busy->isVisible());
  QVERIFY(!w.openModel({}));  // one load at a time, and the user is told
  QCOMPARE(app.prompts.errors.size(), 1);
  QTest::qWait(50);
  QVERIFY(busy->isVisible());  // still responsive while the worker loads
  QVERIFY(waitFor([&] { return app.bridge.isModelReady(); }));
  QVERIFY(!busy->isVisible());
}

void TestModelsAndErrors::recentModelsAreRemembered() {
  const QString model = peerDir() + "/logits/tiny-llama-f32.gguf";
  if (!QFileInfo::exists(model)) QSKIP("peer models not present");
  AppFixture app;
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel(model));
  QCOMPARE(w.appSettings().recent_models.value(0), model);
  QCOMPARE(AppSettings::load(app.settings).last_model, model);
  QCOMPARE(QString::fromStdString(app.engine.last_load_options().model_path), model);
}

void TestModelsAndErrors::modelInfoReadsGguf() {
  const QString model = peerDir() + "/logits/tiny-llama-f32.gguf";
  if (!QFileInfo::exists(model)) QSKIP("peer models not present");
  ModelInfoDialog dialog(model);
  QVERIFY(dialog.loadedOk());
  const auto tables = dialog.findChildren<QTableWidget*>();
  QCOMPARE(tables.size(), 2);
  QTableWidget* meta = tables[0]->columnCount() == 3 ? tables[0] : tables[1];
  QTableWidget* tensors = meta == tables[0] ? tables[1] : tables[0];
  bool saw_arch = false;
  for (int r = 0; r < meta->rowCount(); ++r)
    saw_arch |= meta->item(r, 0)->text() == "general.architecture" &&
                meta->item(r, 2)->text().contains("llama");
  QVERIFY(saw_arch);
  QVERIFY(tensors->rowCount() > 10);  // 4 layers x 9 tensors + embeddings, norm, head
  bool saw_summary = false;
  for (QLabel* l : dialog.findChildren<QLabel*>()) saw_summary |= l->text().contains("F32");
  QVERIFY(saw_summary);
}

void TestModelsAndErrors::modelInfoOnBadFileShowsError() {
  QTemporaryDir dir;
  QFile f(dir.filePath("bad.gguf"));
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("GGUF\x03\x00\x00\x00truncated");
  f.close();
  ModelInfoDialog dialog(f.fileName());
  QVERIFY(!dialog.loadedOk());
  QVERIFY(!dialog.errorText().isEmpty());
}

QTEST_MAIN(TestModelsAndErrors)
#include "test_models_and_errors.moc"
