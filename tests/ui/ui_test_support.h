#pragma once
// Shared scaffolding for the UI tests: a recording UserPrompts and a whole app (fake
// engine, bridge, store, settings, window) in a throw-away data folder.
#include <QElapsedTimer>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

#include "ui/chat_store.h"
#include "ui/chat_tab.h"
#include "ui/engine_bridge.h"
#include "ui/fake_engine.h"
#include "ui/main_window.h"
#include "ui/user_prompts.h"

namespace chorus::ui::test {

class RecordingPrompts final : public UserPrompts {
 public:
  QStringList errors;     // "title: message"
  QStringList questions;
  bool answer = true;
  std::optional<QString> next_text;
  void showError(const QString& title, const QString& message) override {
    errors << title + ": " + message;
  }
  bool confirm(const QString&, const QString& question) override {
    questions << question;
    return answer;
  }
  std::optional<QString> askText(const QString&, const QString&, const QString&) override {
    return next_text;
  }
};

// Runs the event loop until pred() holds or timeout_ms passes.
template <typename Pred>
bool waitFor(Pred pred, int timeout_ms = 10000) {
  QElapsedTimer t;
  t.start();
  while (!pred()) {
    if (t.elapsed() > timeout_ms) return false;
    QTest::qWait(5);
  }
  return true;
}

// Members are declared in dependency order, so destruction runs window -> bridge -> engine.
struct AppFixture {
  explicit AppFixture(FakeEngineOptions engine_options = {}, const QString& data_dir = {})
      : engine(engine_options),
        dir_path(data_dir.isEmpty() ? temp.path() : data_dir),
        settings(dir_path + "/settings.ini", QSettings::IniFormat),
        bridge(engine) {
    QString error;
    store_ok = store.open(dir_path, &error);
    store_error = error;
  }

  MainWindow& makeWindow(UserPrompts* use_prompts = nullptr) {
    MainWindowOptions o;
    o.fake_engine = true;
    window = std::make_unique<MainWindow>(bridge, store, settings,
                                          use_prompts ? *use_prompts : prompts, o);
    window->restoreConversations();
    window->show();
    window->activateWindow();
    // Shortcuts go to the active window; a test that needs one fails on its own if it is not.
    if (!QTest::qWaitForWindowActive(window.get())) qWarning("the main window did not become active");
    return *window;
  }
  bool loadModel(const QString& path = {}) {
    QSignalSpy spy(&bridge, &EngineBridge::modelLoadFinished);
    if (!window->openModel(path)) return false;
    return spy.wait(10000) && bridge.isModelReady();
  }
  bool waitIdle(ChatTab* tab, int timeout_ms = 10000) {
    return waitFor([tab] { return !tab->isStreaming(); }, timeout_ms);
  }

  QTemporaryDir temp;
  FakeEngine engine;
  QString dir_path;
  ChatStore store;
  bool store_ok = false;
  QString store_error;
  QSettings settings;
  EngineBridge bridge;
  RecordingPrompts prompts;
  std::unique_ptr<MainWindow> window;
};

// The fake's reply to a single user message, cut to n tokens.
inline QString fakeReplyPrefix(const QString& user_text, int n_tokens) {
  Request r;
  r.messages.push_back({"user", user_text.toStdString()});
  std::string out;
  const auto tokens = FakeEngine::scripted_reply(r);
  for (int i = 0; i < n_tokens && i < int(tokens.size()); ++i) out += tokens[size_t(i)];
  return QString::fromStdString(out);
}

}  // namespace chorus::ui::test
