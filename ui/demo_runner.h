#pragma once
// `chorus --demo N --screenshot FILE`: opens N chats with distinct prompts, starts them all
// at once, and when every reply has finished (or the time limit passes) saves a screenshot
// of the window with the perf panel and prints the largest batch the engine ran.
#include <QObject>
#include <QSet>
#include <QString>

namespace chorus::ui {

class ChatTab;
class EngineBridge;
class MainWindow;

struct DemoOptions {
  int n_tabs = 4;
  QString screenshot_path;  // empty: no screenshot
  int quit_after_ms = 0;    // 0: wait for every reply
  int max_tokens = 160;     // per reply, so a demo on a CPU stays short
};

class DemoRunner : public QObject {
  Q_OBJECT
 public:
  DemoRunner(MainWindow& window, EngineBridge& bridge, DemoOptions options,
             QObject* parent = nullptr);
  void start();  // begins as soon as a model is ready
  static QString samplePrompt(int index);

 Q_SIGNALS:
  void finished(int exit_code);

 private:
  void begin();
  void finishSoon();
  void finish();

  MainWindow& window_;
  EngineBridge& bridge_;
  DemoOptions options_;
  QSet<ChatTab*> pending_;
  bool began_ = false;
  bool done_ = false;
};

}  // namespace chorus::ui
