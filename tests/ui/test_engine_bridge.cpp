// EngineBridge: engine-thread callbacks become GUI-thread signals, coalesced per request so
// a flood of deltas costs at most ~60 signals (and repaints) per second.
#include <QtTest>
#include <atomic>
#include <thread>

#include "ui/message_view.h"
#include "ui_test_support.h"

using namespace chorus;
using namespace chorus::ui;
using namespace chorus::ui::test;

namespace {

// Emits `n_deltas` one-character deltas from its own thread, as fast as it can (with a
// tiny pause every 100 so the burst spans a measurable time), then finishes.
class BurstEngine final : public EngineApi {
 public:
  explicit BurstEngine(int n_deltas) : n_deltas_(n_deltas) {}
  ~BurstEngine() override {
    if (worker_.joinable()) worker_.join();
  }
  Status load_model(const LoadOptions&) override { return Ok{}; }
  RequestId submit(Request, RequestCallbacks cb) override {
    worker_ = std::thread([this, cb = std::move(cb)] {
      for (int i = 0; i < n_deltas_; ++i) {
        cb.on_delta(TokenDelta{1, "x", {i}});
        if (i % 100 == 99) std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
      RequestStats s;
      s.n_generated_tokens = n_deltas_;
      cb.on_finish(1, FinishReason::MaxTokens, s);
    });
    return 1;
  }
  void cancel(RequestId) override {}
  StatsSnapshot stats() const override {
    StatsSnapshot s;
    s.max_batch_seen = 1;
    return s;
  }

 private:
  int n_deltas_;
  std::thread worker_;
};

}  // namespace

class TestEngineBridge : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void burstIsCoalescedToFrameRate();
  void textArrivesBeforeFinish();
  void statsArePolled();
  void loadFailureIsReported();
  void renderingFollowsCoalescedSignals();
};

void TestEngineBridge::burstIsCoalescedToFrameRate() {
  const int n = 10000;
  BurstEngine engine(n);
  EngineBridge bridge(engine);
  QString text;
  int n_signals = 0;
  bool finished = false;
  connect(&bridge, &EngineBridge::textArrived, [&](quint64, const QString& t) {
    text += t;
    ++n_signals;
  });
  connect(&bridge, &EngineBridge::requestFinished, [&] { finished = true; });
  QElapsedTimer clock;
  clock.start();
  bridge.submit(Request{});
  QVERIFY(waitFor([&] { return finished; }));
  const double seconds = clock.elapsed() / 1000.0;
  QCOMPARE(text.size(), n);
  // At most one signal per 16 ms flush, plus slack for the first and last flush.
  const double budget = 62.5 * seconds + 3;
  qInfo("%d deltas in %.3f s -> %d signals (budget %.0f)", n, seconds, n_signals, budget);
  QVERIFY2(n_signals <= budget, qPrintable(QString("%1 signals").arg(n_signals)));
  QVERIFY(n_signals < n / 20);
}

void TestEngineBridge::textArrivesBeforeFinish() {
  FakeEngineOptions o;
  o.step_interval_us = 200;
  FakeEngine engine(o);
  EngineBridge bridge(engine);
  QString text;
  bool finished_after_text = false;
  connect(&bridge, &EngineBridge::textArrived, [&](quint64, const QString& t) { text += t; });
  connect(&bridge, &EngineBridge::requestFinished,
          [&](quint64, FinishReason r, const RequestStats& s) {
            finished_after_text = r == FinishReason::MaxTokens && s.n_generated_tokens == 20 &&
                                  text == fakeReplyPrefix("hello", 20);
          });
  Request r;
  r.messages.push_back({"user", "hello"});
  r.max_tokens = 20;
  bridge.submit(r);
  QVERIFY(waitFor([&] { return !bridge.isInFlight(1); }));
  QVERIFY(finished_after_text);
}

void TestEngineBridge::statsArePolled() {
  FakeEngine engine;
  EngineBridge bridge(engine);
  QSignalSpy spy(&bridge, &EngineBridge::statsUpdated);
  QTest::qWait(1100);
  // 200 ms interval: about five polls per second.
  QVERIFY2(spy.count() >= 4 && spy.count() <= 7, qPrintable(QString::number(spy.count())));
  QCOMPARE(bridge.lastStats().backend_name, std::string("fake"));
}

void TestEngineBridge::loadFailureIsReported() {
  FakeEngine engine;
  EngineBridge bridge(engine);
  QSignalSpy spy(&bridge, &EngineBridge::modelLoadFinished);
  LoadOptions o;
  o.model_path = "/nonexistent/model.gguf";
  QVERIFY(bridge.loadModel(o));
  QVERIFY(bridge.isLoading());
  QVERIFY(spy.wait(5000));
  QCOMPARE(spy.at(0).at(1).toBool(), false);
  QVERIFY(spy.at(0).at(2).toString().contains("no such file"));
  QVERIFY(!bridge.isModelReady());
  QVERIFY(!bridge.isLoading());
}

void TestEngineBridge::renderingFollowsCoalescedSignals() {
  // A visible tab re-renders its streaming message once per text signal, never per delta.
  AppFixture app({.step_interval_us = 500, .tokens_per_step = 1});
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  ChatTab* tab = w.currentTab();
  ChatSettings s = tab->settings();
  s.max_tokens = 400;
  tab->setSettings(s);
  const int64_t renders_before = tab->view()->renderCount();
  const int64_t signals_before = app.bridge.textSignalCount();
  QElapsedTimer clock;
  clock.start();
  QVERIFY(tab->send("stream fast"));
  QVERIFY(app.waitIdle(tab));
  const double seconds = clock.elapsed() / 1000.0;
  const int64_t renders = tab->view()->renderCount() - renders_before;
  const int64_t n_signals = app.bridge.textSignalCount() - signals_before;
  qInfo("%.3f s, %lld text signals, %lld renders", seconds, (long long)n_signals, (long long)renders);
  QVERIFY(renders <= n_signals + 3);  // + the new user and assistant messages, + final
  QVERIFY(n_signals <= 62.5 * seconds + 3);
}

QTEST_MAIN(TestEngineBridge)
#include "test_engine_bridge.moc"
