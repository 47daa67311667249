#pragma once
// The UI's only door to the engine (DESIGN.md §4). Engine callbacks run on the engine
// thread and must not block, so they only append to a mutex-guarded inbox; a GUI-thread
// timer drains it every ~16 ms and emits one signal per request per drain. However fast
// tokens arrive, each conversation therefore sees at most ~60 text signals per second, and
// the signals carry plain values (ids, text, stats), never engine objects.
#include <QObject>
#include <QString>
#include <QTimer>
#include <memory>
#include <set>
#include <thread>

#include "engine/sched/engine_api.h"

namespace chorus::ui {

struct BridgeTiming {
  int flush_interval_ms = 16;   // ~60 Hz: the repaint budget of a streaming tab
  int stats_interval_ms = 200;  // 5 Hz: cheap, and smooth enough for the perf panel
};

class EngineBridge : public QObject {
  Q_OBJECT
 public:
  explicit EngineBridge(EngineApi& engine, BridgeTiming timing = {}, QObject* parent = nullptr);
  ~EngineBridge() override;

  RequestId submit(Request request);
  void cancel(RequestId id);
  // Loads on a worker thread (load_model blocks); the result arrives as modelLoadFinished.
  // Returns false when a load is already running.
  bool loadModel(const LoadOptions& options);

  bool isLoading() const { return loading_; }
  bool isModelReady() const { return model_ready_; }
  QString modelPath() const { return model_path_; }
  const StatsSnapshot& lastStats() const { return last_stats_; }
  bool isInFlight(RequestId id) const { return in_flight_.count(id) != 0; }
  // Number of textArrived signals so far (coalescing tests and the perf panel).
  int64_t textSignalCount() const { return n_text_signals_; }

 public Q_SLOTS:
  void flush();       // drain the inbox now
  void pollStats();

 Q_SIGNALS:
  void textArrived(quint64 id, const QString& text);
  void requestFailed(quint64 id, const QString& message);
  void requestFinished(quint64 id, chorus::FinishReason reason, const chorus::RequestStats& stats);
  void statsUpdated(const chorus::StatsSnapshot& stats);
  void modelLoadStarted(const QString& path);
  void modelLoadFinished(const QString& path, bool ok, const QString& message);

 private:
  struct Inbox;
  void updateFlushTimer();

  EngineApi& engine_;
  std::shared_ptr<Inbox> inbox_;  // shared with callbacks that may outlive this object
  QTimer flush_timer_;
  QTimer stats_timer_;
  std::set<RequestId> in_flight_;
  std::thread load_thread_;
  bool loading_ = false;
  bool model_ready_ = false;
  QString model_path_;
  QString loading_path_;
  StatsSnapshot last_stats_;
  int64_t n_text_signals_ = 0;
};

// Human-readable finish reason for message footers.
QString finishReasonText(FinishReason reason);

}  // namespace chorus::ui

Q_DECLARE_METATYPE(chorus::FinishReason)
Q_DECLARE_METATYPE(chorus::RequestStats)
Q_DECLARE_METATYPE(chorus::StatsSnapshot)
