#pragma once
// The main window: one tab per conversation, menus, the model status, and the perf dock.
// It owns no engine, store or settings: they are passed in, so tests build a window on a
// fake engine and a throw-away database.
#include <QMainWindow>
#include <QSet>

#include "ui/app_settings.h"

class QLabel;
class QMenu;
class QProgressBar;
class QSettings;
class QTabWidget;

namespace chorus::ui {

class ChatStore;
class ChatTab;
class EngineBridge;
class PerfPanel;
class UserPrompts;
struct Conversation;

struct MainWindowOptions {
  QString model_override;    // --model: load this instead of the remembered model
  QString backend_override;  // --backend: "auto", "cpu" or "cuda"
  bool fake_engine = false;  // the fake engine loads "" as its built-in model
};

enum class ExportFormat { Markdown, Json };

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  MainWindow(EngineBridge& bridge, ChatStore& store, QSettings& settings, UserPrompts& prompts,
             MainWindowOptions options = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  void restoreConversations();  // tabs from the store; one empty chat when there are none
  void loadInitialModel();      // --model, else the last model, else the default model
  bool openModel(const QString& path);  // starts a background load; false while one runs
  static QString defaultModelPath();

  ChatTab* newTab();
  void closeTab(int index);
  void renameTab(int index, const QString& title);
  bool reopenClosedTab();
  int tabCount() const;
  ChatTab* tab(int index) const;
  ChatTab* currentTab() const;
  QTabWidget* tabWidget() const { return tabs_; }
  PerfPanel* perfPanel() const { return perf_; }
  bool tabHasUnreadMarker(int index) const;

  const AppSettings& appSettings() const { return app_; }
  void applyAppSettings(const AppSettings& settings);
  bool exportChat(int index, const QString& file_path, ExportFormat format);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  ChatTab* addTab(const Conversation& c);
  void buildMenus();
  void buildStatusBar();
  void rebuildRecentMenu();
  void updateTabMarker(ChatTab* tab);
  void saveTabOrder();
  void onStats();
  void onModelLoadStarted(const QString& path);
  void onModelLoadFinished(const QString& path, bool ok, const QString& message);
  void promptOpenModel();
  void promptRename(int index);
  void promptExport(ExportFormat format);
  void showModelInfo();
  void showAppSettings();
  void showTabMenu(const QPoint& pos);

  EngineBridge& bridge_;
  ChatStore& store_;
  QSettings& settings_;
  UserPrompts& prompts_;
  MainWindowOptions options_;
  AppSettings app_;
  QTabWidget* tabs_;
  PerfPanel* perf_;
  QMenu* recent_menu_ = nullptr;
  QLabel* model_label_ = nullptr;
  QLabel* speed_label_ = nullptr;
  QProgressBar* busy_ = nullptr;
  QSet<ChatTab*> unread_;  // background tabs that received text since last shown
};

}  // namespace chorus::ui
