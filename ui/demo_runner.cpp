#include "ui/demo_runner.h"

#include <QDir>
#include <QFileInfo>
#include <QPixmap>
#include <QTimer>
#include <cstdio>

#include "ui/chat_tab.h"
#include "ui/engine_bridge.h"
#include "ui/main_window.h"
#include "ui/perf_panel.h"

namespace chorus::ui {

DemoRunner::DemoRunner(MainWindow& window, EngineBridge& bridge, DemoOptions options,
                       QObject* parent)
    : QObject(parent), window_(window), bridge_(bridge), options_(std::move(options)) {}

QString DemoRunner::samplePrompt(int index) {
  static const char* const kPrompts[] = {
      "Explain what a hash map is, with a short C++ example.",
      "Write a haiku about the sea at night.",
      "List five tips for writing clear commit messages.",
      "What is the difference between a process and a thread?",
      "Give me a recipe for a simple tomato soup.",
      "Summarize the plot of Hamlet in three sentences.",
      "How do I reverse a linked list in Python?",
      "Why is the sky blue? Answer for a ten-year-old.",
      "Suggest names for a small bakery that sells bread and coffee.",
      "Explain binary search and its running time.",
      "Write a limerick about a cat who learns to code.",
      "What should I pack for a weekend hiking trip?",
  };
  const int n = int(std::size(kPrompts));
  QString p = kPrompts[index % n];
  if (index >= n) p += QString(" (variation %1)").arg(index / n + 1);
  return p;
}

void DemoRunner::start() {
  if (options_.quit_after_ms > 0) QTimer::singleShot(options_.quit_after_ms, this, &DemoRunner::finish);
  if (bridge_.isModelReady()) {
    begin();
    return;
  }
  connect(&bridge_, &EngineBridge::modelLoadFinished, this,
          [this](const QString&, bool ok, const QString& message) {
            if (ok) {
              begin();
            } else if (!done_) {
              done_ = true;
              std::fprintf(stderr, "chorus: demo: %s\n", qPrintable(message));
              Q_EMIT finished(1);
            }
          });
}

void DemoRunner::begin() {
  if (began_ || done_) return;
  began_ = true;
  window_.perfPanel()->show();
  for (int i = 0; i < options_.n_tabs; ++i) {
    ChatTab* t = i == 0 && window_.tabCount() == 1 && window_.tab(0)->conversation().messages.isEmpty()
                     ? window_.tab(0)
                     : window_.newTab();
    ChatSettings s = t->settings();
    s.max_tokens = options_.max_tokens;
    s.seed = i + 1;
    t->setSettings(s);
    pending_.insert(t);
    connect(t, &ChatTab::streamingChanged, this, [this, t](bool streaming) {
      if (streaming || !pending_.remove(t)) return;
      if (pending_.isEmpty()) finishSoon();
    });
  }
  // Submit all prompts back to back so they join the engine's batch together.
  for (int i = 0; i < window_.tabCount(); ++i)
    if (ChatTab* t = window_.tab(i); pending_.contains(t)) t->send(samplePrompt(i));
  window_.tabWidget()->setCurrentIndex(0);
}

void DemoRunner::finishSoon() {
  // Two stats polls later the perf panel shows the final numbers.
  QTimer::singleShot(450, this, &DemoRunner::finish);
}

void DemoRunner::finish() {
  if (done_) return;
  done_ = true;
  bridge_.pollStats();
  int code = 0;
  if (!options_.screenshot_path.isEmpty()) {
    QDir().mkpath(QFileInfo(options_.screenshot_path).absolutePath());
    if (!window_.grab().save(options_.screenshot_path)) {
      std::fprintf(stderr, "chorus: cannot write screenshot %s\n", qPrintable(options_.screenshot_path));
      code = 2;
    }
  }
  if (!pending_.isEmpty())
    std::fprintf(stderr, "chorus: demo: %d replies still streaming at the time limit\n",
                 int(pending_.size()));
  std::printf("max M: %d\n", bridge_.lastStats().max_batch_seen);
  std::fflush(stdout);
  Q_EMIT finished(code);
}

}  // namespace chorus::ui
