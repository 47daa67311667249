// The UI on the real engine (CPU backend) with a tiny random llama model from
// ../shared/peer: the bridge streams a greedy continuation, and two tabs generate together.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "engine/sched/default_engine.h"
#include "ui_test_support.h"

using namespace chorus;
using namespace chorus::ui;
using namespace chorus::ui::test;

namespace {

QString peerModel(const char* name) {
  QString dir = qEnvironmentVariable("CHORUS_PEER_DIR");
  if (dir.isEmpty()) dir = QDir::current().absoluteFilePath("../shared/peer");
  return dir + "/logits/" + name;
}

bool loadInto(EngineBridge& bridge, const QString& path) {
  QSignalSpy spy(&bridge, &EngineBridge::modelLoadFinished);
  LoadOptions o;
  o.model_path = path.toStdString();
  o.backend = "cpu";
  o.context_tokens = 512;
  if (!bridge.loadModel(o) || !spy.wait(60000)) return false;
  if (!spy.at(0).at(1).toBool()) qWarning("load failed: %s", qPrintable(spy.at(0).at(2).toString()));
  return bridge.isModelReady();
}

}  // namespace

class TestRealEngine : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase();
  void bridgeStreamsGreedyContinuation();
  void twoTabsGenerateTogether();

 private:
  QString model_;
};

void TestRealEngine::initTestCase() {
  model_ = peerModel("tiny-llama-f32.gguf");
  if (!QFileInfo::exists(model_)) QSKIP("tiny peer model not present");
}

void TestRealEngine::bridgeStreamsGreedyContinuation() {
  auto engine = make_default_engine();
  EngineBridge bridge(*engine);
  QVERIFY(loadInto(bridge, model_));
  QFile f(peerModel("tiny-llama-f32.json"));
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QJsonObject truth = QJsonDocument::fromJson(f.readAll()).object();
  Request r;
  for (const QJsonValue& v : truth["tokens"].toArray()) r.prompt_tokens.push_back(v.toInt());
  r.max_tokens = 12;  // greedy (temperature 0 by default)
  QString text;
  int n_signals = 0;
  std::optional<FinishReason> reason;
  RequestStats stats;
  QString failure;
  connect(&bridge, &EngineBridge::textArrived, [&](quint64, const QString& t) { text += t; ++n_signals; });
  connect(&bridge, &EngineBridge::requestFailed, [&](quint64, const QString& m) { failure = m; });
  connect(&bridge, &EngineBridge::requestFinished, [&](quint64, FinishReason fr, const RequestStats& s) {
    reason = fr;
    stats = s;
  });
  bridge.submit(r);
  QVERIFY(waitFor([&] { return reason.has_value(); }, 60000));
  QVERIFY2(failure.isEmpty(), qPrintable(failure));
  QVERIFY(*reason == FinishReason::MaxTokens || *reason == FinishReason::EndOfGeneration);
  QVERIFY(stats.n_generated_tokens >= 1);
  QCOMPARE(stats.n_prompt_tokens, int(r.prompt_tokens.size()));
  qInfo("%d tokens, %d text signals, TTFT %.1f ms, %.1f tok/s: \"%s\"", stats.n_generated_tokens,
        n_signals, stats.t_first_token_us / 1000.0, stats.decode_tok_per_s, qPrintable(text.left(80)));
  bridge.pollStats();
  QVERIFY(bridge.lastStats().model_loaded);
  QVERIFY(!bridge.lastStats().backend_name.empty());
}

void TestRealEngine::twoTabsGenerateTogether() {
  auto engine = make_default_engine();
  EngineBridge bridge(*engine);
  QTemporaryDir dir;
  ChatStore store;
  QString error;
  QVERIFY(store.open(dir.path(), &error));
  QSettings settings(dir.filePath("settings.ini"), QSettings::IniFormat);
  RecordingPrompts prompts;
  MainWindow w(bridge, store, settings, prompts);
  w.restoreConversations();
  w.show();
  QVERIFY(loadInto(bridge, model_));
  ChatTab* a = w.currentTab();
  ChatTab* b = w.newTab();
  for (ChatTab* t : {a, b}) {
    ChatSettings s = t->settings();
    s.max_tokens = 24;
    s.temperature = 0;
    t->setSettings(s);
  }
  QVERIFY(a->send("Hello there"));
  QVERIFY(b->send("Tell me about the sea"));
  QVERIFY(waitFor([&] { return !a->isStreaming() && !b->isStreaming(); }, 60000));
  for (ChatTab* t : {a, b}) {
    const Message& m = t->conversation().messages.last();
    QVERIFY2(m.state == MessageState::Complete, qPrintable(m.note));
    QVERIFY(t->speed().n_generated >= 1);
  }
  QVERIFY(prompts.errors.isEmpty());
  qInfo("max M seen: %d", engine->stats().max_batch_seen);
  QVERIFY(engine->stats().max_batch_seen >= 1);
}

QTEST_MAIN(TestRealEngine)
#include "test_real_engine.moc"
