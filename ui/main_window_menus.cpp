// MainWindow's menus, status bar and the dialogs they open (split from main_window.cpp to
// keep each file to one job: this one is the command surface).
#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QRegularExpression>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>

#include "ui/app_settings_dialog.h"
#include "ui/chat_tab.h"
#include "ui/engine_bridge.h"
#include "ui/main_window.h"
#include "ui/model_info_dialog.h"
#include "ui/perf_panel.h"
#include "ui/user_prompts.h"

namespace chorus::ui {

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&New chat"), QKeySequence(Qt::CTRL | Qt::Key_T), this, [this] { newTab(); });
  file->addAction(tr("&Reopen closed chat"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T), this,
                  [this] { reopenClosedTab(); });
  file->addAction(tr("&Close chat"), QKeySequence(Qt::CTRL | Qt::Key_W), this,
                  [this] { closeTab(tabs_->currentIndex()); });
  file->addSeparator();
  file->addAction(tr("&Open model…"), QKeySequence::Open, this, &MainWindow::promptOpenModel);
  recent_menu_ = file->addMenu(tr("Recent &models"));
  rebuildRecentMenu();
  file->addAction(tr("Model &info…"), this, &MainWindow::showModelInfo);
  file->addSeparator();
  file->addAction(tr("Export chat as &Markdown…"), this, [this] { promptExport(ExportFormat::Markdown); });
  file->addAction(tr("Export chat as &JSON…"), this, [this] { promptExport(ExportFormat::Json); });
  file->addSeparator();
  file->addAction(tr("&Settings…"), QKeySequence(Qt::CTRL | Qt::Key_Comma), this,
                  &MainWindow::showAppSettings);
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* chat = menuBar()->addMenu(tr("&Chat"));
  chat->addAction(tr("&Rename…"), QKeySequence(Qt::Key_F2), this,
                  [this] { promptRename(tabs_->currentIndex()); });
  chat->addAction(tr("Chat &settings…"), this, [this] {
    if (ChatTab* t = currentTab()) t->openSettingsDialog();
  });
  chat->addAction(tr("Re&generate last reply"), QKeySequence(Qt::CTRL | Qt::Key_R), this, [this] {
    if (ChatTab* t = currentTab()) t->regenerate();
  });
  chat->addAction(tr("S&top"), QKeySequence(Qt::CTRL | Qt::Key_Period), this, [this] {
    if (ChatTab* t = currentTab()) t->stop();
  });
  chat->addSeparator();
  QAction* next = chat->addAction(tr("&Next chat"), this, [this] {
    if (tabCount() > 0) tabs_->setCurrentIndex((tabs_->currentIndex() + 1) % tabCount());
  });
  next->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Tab), QKeySequence(Qt::CTRL | Qt::Key_PageDown)});
  QAction* prev = chat->addAction(tr("&Previous chat"), this, [this] {
    if (tabCount() > 0) tabs_->setCurrentIndex((tabs_->currentIndex() + tabCount() - 1) % tabCount());
  });
  prev->setShortcuts({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Backtab),
                      QKeySequence(Qt::CTRL | Qt::Key_PageUp)});
  for (QAction* a : {next, prev}) a->setShortcutContext(Qt::ApplicationShortcut);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* perf = perf_->toggleViewAction();
  perf->setText(tr("&Performance panel"));
  perf->setShortcut(QKeySequence(Qt::Key_F9));
  view->addAction(perf);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About Chorus"), this, [this] {
    QMessageBox::about(this, tr("About Chorus"),
                       tr("<b>Chorus %1</b><p>Chat with local language models, many "
                          "conversations at once.</p>").arg(CHORUS_VERSION));
  });
}

void MainWindow::buildStatusBar() {
  model_label_ = new QLabel(tr("No model"), this);
  busy_ = new QProgressBar(this);
  busy_->setRange(0, 0);  // indeterminate: load_model reports no progress
  busy_->setMaximumWidth(160);
  busy_->hide();
  speed_label_ = new QLabel(this);
  statusBar()->addWidget(model_label_);
  statusBar()->addWidget(busy_);
  statusBar()->addPermanentWidget(speed_label_);
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  for (const QString& path : app_.recent_models)
    recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] { openModel(path); })
        ->setToolTip(path);
  recent_menu_->setEnabled(!app_.recent_models.isEmpty());
}

void MainWindow::promptOpenModel() {
  const QString dir = QFileInfo(bridge_.modelPath().isEmpty() ? defaultModelPath()
                                                              : bridge_.modelPath()).absolutePath();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), dir,
                                                    tr("GGUF models (*.gguf);;All files (*)"));
  if (!path.isEmpty()) openModel(path);
}

void MainWindow::promptRename(int index) {
  ChatTab* t = tab(index);
  if (!t) return;
  if (const auto title = prompts_.askText(tr("Rename chat"), tr("Title:"), t->title()))
    renameTab(index, *title);
}

void MainWindow::promptExport(ExportFormat format) {
  ChatTab* t = currentTab();
  if (!t) return;
  const bool json = format == ExportFormat::Json;
  QString name = t->title();
  name.replace(QRegularExpression("[^A-Za-z0-9 _-]"), "_");
  const QString path = QFileDialog::getSaveFileName(
      this, json ? tr("Export chat as JSON") : tr("Export chat as Markdown"),
      name + (json ? ".json" : ".md"), json ? tr("JSON (*.json)") : tr("Markdown (*.md)"));
  if (!path.isEmpty()) exportChat(tabs_->currentIndex(), path, format);
}

void MainWindow::showModelInfo() {
  const QString path = bridge_.modelPath();
  if (path.isEmpty()) {
    prompts_.showError(tr("Model information"), tr("No model file is loaded."));
    return;
  }
  auto* dialog = new ModelInfoDialog(path, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  dialog->open();
}

void MainWindow::showAppSettings() {
  auto* dialog = new AppSettingsDialog(app_, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this, [this, dialog] { applyAppSettings(dialog->settings()); });
  dialog->open();
}

void MainWindow::showTabMenu(const QPoint& pos) {
  const int index = tabs_->tabBar()->tabAt(pos);
  ChatTab* t = tab(index);
  if (!t) return;
  QMenu menu(this);
  menu.addAction(tr("Rename…"), this, [this, index] { promptRename(index); });
  menu.addAction(tr("Settings…"), t, &ChatTab::openSettingsDialog);
  menu.addSeparator();
  menu.addAction(tr("Close"), this, [this, index] { closeTab(index); });
  menu.exec(tabs_->tabBar()->mapToGlobal(pos));
}

}  // namespace chorus::ui
