#include "ui/main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QPainter>
#include <QProgressBar>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>

#include "ui/chat_export.h"
#include "ui/chat_input.h"
#include "ui/chat_store.h"
#include "ui/chat_tab.h"
#include "ui/engine_bridge.h"
#include "ui/perf_panel.h"
#include "ui/theme.h"
#include "ui/user_prompts.h"

namespace chorus::ui {
namespace {

QIcon dotIcon(const QColor& color) {
  QPixmap pm(16, 16);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(Qt::NoPen);
  p.setBrush(color);
  p.drawEllipse(QRectF(3, 3, 10, 10));
  return QIcon(pm);
}

}  // namespace

MainWindow::MainWindow(EngineBridge& bridge, ChatStore& store, QSettings& settings,
                       UserPrompts& prompts, MainWindowOptions options, QWidget* parent)
    : QMainWindow(parent), bridge_(bridge), store_(store), settings_(settings), prompts_(prompts),
      options_(std::move(options)), app_(AppSettings::load(settings)) {
  setWindowTitle("Chorus");
  resize(1280, 800);
  tabs_ = new QTabWidget(this);
  tabs_->setMovable(true);
  tabs_->setTabsClosable(true);
  tabs_->setDocumentMode(true);
  tabs_->setUsesScrollButtons(true);
  tabs_->tabBar()->setContextMenuPolicy(Qt::CustomContextMenu);
  setCentralWidget(tabs_);
  connect(tabs_, &QTabWidget::tabCloseRequested, this, &MainWindow::closeTab);
  connect(tabs_->tabBar(), &QTabBar::tabMoved, this, &MainWindow::saveTabOrder);
  connect(tabs_->tabBar(), &QTabBar::tabBarDoubleClicked, this, &MainWindow::promptRename);
  connect(tabs_->tabBar(), &QTabBar::customContextMenuRequested, this, &MainWindow::showTabMenu);
  connect(tabs_, &QTabWidget::currentChanged, this, [this](int index) {
    if (ChatTab* t = tab(index)) {
      unread_.remove(t);
      updateTabMarker(t);
    }
  });
  perf_ = new PerfPanel(this);
  addDockWidget(Qt::RightDockWidgetArea, perf_);
  buildMenus();
  buildStatusBar();
  connect(&bridge_, &EngineBridge::statsUpdated, this, &MainWindow::onStats);
  connect(&bridge_, &EngineBridge::modelLoadStarted, this, &MainWindow::onModelLoadStarted);
  connect(&bridge_, &EngineBridge::modelLoadFinished, this, &MainWindow::onModelLoadFinished);
  connect(&store_, &ChatStore::storageError, this,
          [this](const QString& message) { prompts_.showError(tr("Saving failed"), message); });
  restoreGeometry(settings_.value("window/geometry").toByteArray());
  restoreState(settings_.value("window/state").toByteArray());
}

MainWindow::~MainWindow() = default;

QString MainWindow::defaultModelPath() {
  const QString data = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
  return QDir(data).filePath("chorus/models/SmolLM2-135M-Instruct.Q4_1.gguf");
}

void MainWindow::restoreConversations() {
  for (const Conversation& c : store_.loadOpenConversations()) addTab(c);
  if (tabCount() == 0) newTab();
  tabs_->setCurrentIndex(0);
}

ChatTab* MainWindow::addTab(const Conversation& c) {
  auto* t = new ChatTab(c, bridge_, store_, prompts_, tabs_);
  tabs_->addTab(t, c.title);
  connect(t, &ChatTab::titleChanged, this, [this, t](const QString& title) {
    tabs_->setTabText(tabs_->indexOf(t), title);
  });
  connect(t, &ChatTab::streamingChanged, this, [this, t] { updateTabMarker(t); });
  connect(t, &ChatTab::textActivity, this, [this, t] {
    if (t != currentTab() && !unread_.contains(t)) {
      unread_.insert(t);
      updateTabMarker(t);
    }
  });
  return t;
}

ChatTab* MainWindow::newTab() {
  Conversation c;
  c.title = defaultChatTitle();
  c.id = store_.createConversation(c, tabCount());
  ChatTab* t = addTab(c);
  tabs_->setCurrentWidget(t);
  t->input()->setFocus();
  return t;
}

void MainWindow::closeTab(int index) {
  ChatTab* t = tab(index);
  if (!t) return;
  store_.flushPending();
  unread_.remove(t);
  tabs_->removeTab(index);
  store_.closeConversation(t->conversationId());
  delete t;  // cancels its request, if any
  saveTabOrder();
  if (tabCount() == 0) newTab();
}

bool MainWindow::reopenClosedTab() {
  const auto c = store_.reopenLastClosed();
  if (!c) return false;
  tabs_->setCurrentWidget(addTab(*c));
  saveTabOrder();
  return true;
}

void MainWindow::renameTab(int index, const QString& title) {
  if (ChatTab* t = tab(index)) t->setTitle(title);
}

int MainWindow::tabCount() const { return tabs_->count(); }
ChatTab* MainWindow::tab(int index) const { return qobject_cast<ChatTab*>(tabs_->widget(index)); }
ChatTab* MainWindow::currentTab() const { return qobject_cast<ChatTab*>(tabs_->currentWidget()); }
bool MainWindow::tabHasUnreadMarker(int index) const { return unread_.contains(tab(index)); }

void MainWindow::saveTabOrder() {
  QVector<qint64> ids;
  for (int i = 0; i < tabCount(); ++i) ids << tab(i)->conversationId();
  store_.setPositions(ids);
}

void MainWindow::updateTabMarker(ChatTab* t) {
  static const QIcon streaming = dotIcon(QColor(0x34, 0xc7, 0x59));
  static const QIcon unread = dotIcon(QColor(0x34, 0x7d, 0xf6));
  const int index = tabs_->indexOf(t);
  if (index < 0) return;
  if (t->isStreaming()) {
    tabs_->setTabIcon(index, streaming);
    tabs_->setTabToolTip(index, tr("Generating…"));
  } else if (unread_.contains(t)) {
    tabs_->setTabIcon(index, unread);
    tabs_->setTabToolTip(index, tr("New reply"));
  } else {
    tabs_->setTabIcon(index, QIcon());
    tabs_->setTabToolTip(index, QString());
  }
}

void MainWindow::onStats() {
  const StatsSnapshot& s = bridge_.lastStats();
  QVector<TabPerfRow> rows;
  for (int i = 0; i < tabCount(); ++i) {
    ChatTab* t = tab(i);
    for (const auto& r : s.requests)
      if (r.id == t->currentRequest()) t->updateSpeed(r.stats);
    rows.push_back({t->title(), t->isStreaming(), t->speed().decode_tok_per_s, t->speed().ttft_ms,
                    t->speed().n_generated});
  }
  QElapsedTimer cost;
  cost.start();
  if (perf_->isVisible()) perf_->updateStats(s, rows);
  if (cost.elapsed() > 50) qWarning("chorus: perf panel update took %lld ms", cost.elapsed());
  speed_label_->setText(tr("M %1 · %2 tok/s").arg(s.current_batch).arg(s.aggregate_tok_per_s, 0, 'f', 0));
}

bool MainWindow::openModel(const QString& path) {
  LoadOptions o;
  o.model_path = path.toStdString();
  o.backend = (options_.backend_override.isEmpty() ? app_.backend : options_.backend_override).toStdString();
  o.n_threads = app_.cpu_threads;
  o.context_tokens = app_.context_tokens;
  if (!bridge_.loadModel(o)) {
    prompts_.showError(tr("Model is loading"), tr("Wait for the current model to finish loading."));
    return false;
  }
  return true;
}

void MainWindow::loadInitialModel() {
  QString path = options_.model_override;
  if (path.isEmpty() && !options_.fake_engine)
    path = !app_.last_model.isEmpty() && QFileInfo::exists(app_.last_model) ? app_.last_model
                                                                           : defaultModelPath();
  if (!path.isEmpty() && !QFileInfo::exists(path)) {
    prompts_.showError(tr("Model not found"),
                       tr("No model file at\n%1\n\nInstall the default model with the setup "
                          "script, or open a GGUF file with File → Open model…").arg(path));
    model_label_->setText(tr("No model"));
    return;
  }
  openModel(path);
}

void MainWindow::onModelLoadStarted(const QString& path) {
  busy_->show();
  model_label_->setText(tr("Loading %1…").arg(path.isEmpty() ? tr("model") : QFileInfo(path).fileName()));
}

void MainWindow::onModelLoadFinished(const QString& path, bool ok, const QString& message) {
  busy_->hide();
  if (!ok) {
    model_label_->setText(tr("No model"));
    prompts_.showError(tr("Could not load model"), tr("%1\n\n%2").arg(path, message));
    return;
  }
  const QString name = path.isEmpty() ? tr("fake model") : QFileInfo(path).fileName();
  model_label_->setText(tr("Model: %1").arg(name));
  setWindowTitle(tr("Chorus — %1").arg(name));
  if (!path.isEmpty()) {
    app_.last_model = path;
    app_.addRecentModel(path);
    app_.save(settings_);
    rebuildRecentMenu();
  }
}

void MainWindow::applyAppSettings(const AppSettings& settings) {
  const bool reload = settings.backend != app_.backend || settings.cpu_threads != app_.cpu_threads ||
                      settings.context_tokens != app_.context_tokens;
  app_ = settings;
  app_.save(settings_);
  if (auto* app = qobject_cast<QApplication*>(QCoreApplication::instance()))
    applyTheme(*app, app_.theme, app_.font_point_size);
  if (reload && bridge_.isModelReady() &&
      prompts_.confirm(tr("Reload model"), tr("Reload the model now to apply the engine settings?")))
    openModel(bridge_.modelPath());
}

bool MainWindow::exportChat(int index, const QString& file_path, ExportFormat format) {
  ChatTab* t = tab(index);
  if (!t) return false;
  QFile f(file_path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    prompts_.showError(tr("Export failed"), tr("Cannot write %1: %2").arg(file_path, f.errorString()));
    return false;
  }
  const QByteArray data = format == ExportFormat::Json ? exportJson(t->conversation())
                                                       : exportMarkdown(t->conversation()).toUtf8();
  if (f.write(data) != data.size()) {
    prompts_.showError(tr("Export failed"), tr("Writing %1 failed: %2").arg(file_path, f.errorString()));
    return false;
  }
  return true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  store_.flushPending();
  settings_.setValue("window/geometry", saveGeometry());
  settings_.setValue("window/state", saveState());
  QMainWindow::closeEvent(event);
}

}  // namespace chorus::ui
