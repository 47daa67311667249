#include "ui/engine_bridge.h"

#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace chorus::ui {

// Written by engine-thread callbacks, drained by the GUI thread. Holding only plain data
// keeps every callback short and non-blocking (one lock, one append).
struct EngineBridge::Inbox {
  struct Finish { RequestId id; FinishReason reason; RequestStats stats; };
  struct Failure { RequestId id; std::string message; };
  struct Loaded { bool ok; std::string message; };

  std::mutex mu;
  std::vector<RequestId> text_order;                  // first-arrival order in this drain
  std::unordered_map<RequestId, std::string> text;    // accumulated UTF-8 per request
  std::vector<Failure> failures;
  std::vector<Finish> finishes;
  std::optional<Loaded> loaded;
};

EngineBridge::EngineBridge(EngineApi& engine, BridgeTiming timing, QObject* parent)
    : QObject(parent), engine_(engine), inbox_(std::make_shared<Inbox>()) {
  qRegisterMetaType<chorus::FinishReason>();
  qRegisterMetaType<chorus::RequestStats>();
  qRegisterMetaType<chorus::StatsSnapshot>();
  flush_timer_.setTimerType(Qt::PreciseTimer);
  flush_timer_.setInterval(timing.flush_interval_ms);
  connect(&flush_timer_, &QTimer::timeout, this, &EngineBridge::flush);
  stats_timer_.setInterval(timing.stats_interval_ms);
  connect(&stats_timer_, &QTimer::timeout, this, &EngineBridge::pollStats);
  stats_timer_.start();
}

EngineBridge::~EngineBridge() {
  // Requests still running would deliver into an inbox nobody drains; stop them.
  for (RequestId id : in_flight_) engine_.cancel(id);
  if (load_thread_.joinable()) load_thread_.join();
}

RequestId EngineBridge::submit(Request request) {
  std::weak_ptr<Inbox> weak = inbox_;
  RequestCallbacks cb;
  cb.on_delta = [weak](const TokenDelta& d) {
    if (d.text.empty()) return;
    auto inbox = weak.lock();
    if (!inbox) return;
    std::lock_guard lock(inbox->mu);
    auto [it, fresh] = inbox->text.try_emplace(d.id);
    if (fresh) inbox->text_order.push_back(d.id);
    it->second += d.text;
  };
  cb.on_finish = [weak](RequestId id, FinishReason reason, const RequestStats& stats) {
    if (auto inbox = weak.lock()) {
      std::lock_guard lock(inbox->mu);
      inbox->finishes.push_back({id, reason, stats});
    }
  };
  cb.on_error = [weak](RequestId id, const Error& error) {
    if (auto inbox = weak.lock()) {
      std::lock_guard lock(inbox->mu);
      inbox->failures.push_back({id, error.message});
    }
  };
  const RequestId id = engine_.submit(std::move(request), std::move(cb));
  in_flight_.insert(id);
  updateFlushTimer();
  return id;
}

void EngineBridge::cancel(RequestId id) {
  if (in_flight_.count(id)) engine_.cancel(id);
}

bool EngineBridge::loadModel(const LoadOptions& options) {
  if (loading_) return false;
  if (load_thread_.joinable()) load_thread_.join();  // the previous load has reported
  loading_ = true;
  model_ready_ = false;
  loading_path_ = QString::fromStdString(options.model_path);
  Q_EMIT modelLoadStarted(loading_path_);
  std::weak_ptr<Inbox> weak = inbox_;
  EngineApi* engine = &engine_;
  load_thread_ = std::thread([engine, weak, options] {
    const Status st = engine->load_model(options);
    if (auto inbox = weak.lock()) {
      std::lock_guard lock(inbox->mu);
      inbox->loaded = Inbox::Loaded{st.ok(), st.ok() ? std::string() : st.message()};
    }
  });
  updateFlushTimer();
  return true;
}

void EngineBridge::flush() {
  std::vector<RequestId> order;
  std::unordered_map<RequestId, std::string> text;
  std::vector<Inbox::Failure> failures;
  std::vector<Inbox::Finish> finishes;
  std::optional<Inbox::Loaded> loaded;
  {
    std::lock_guard lock(inbox_->mu);
    order.swap(inbox_->text_order);
    text.swap(inbox_->text);
    failures.swap(inbox_->failures);
    finishes.swap(inbox_->finishes);
    loaded.swap(inbox_->loaded);
  }
  // Text before failures before finishes: a finished reply is complete when it is announced.
  for (RequestId id : order) {
    ++n_text_signals_;
    Q_EMIT textArrived(id, QString::fromUtf8(text[id].data(), qsizetype(text[id].size())));
  }
  for (const auto& f : failures) Q_EMIT requestFailed(f.id, QString::fromStdString(f.message));
  for (const auto& f : finishes) {
    in_flight_.erase(f.id);
    Q_EMIT requestFinished(f.id, f.reason, f.stats);
  }
  if (loaded) {
    loading_ = false;
    model_ready_ = loaded->ok;
    if (loaded->ok) model_path_ = loading_path_;
    Q_EMIT modelLoadFinished(loading_path_, loaded->ok, QString::fromStdString(loaded->message));
    pollStats();
  }
  updateFlushTimer();
}

void EngineBridge::pollStats() {
  last_stats_ = engine_.stats();
  Q_EMIT statsUpdated(last_stats_);
}

void EngineBridge::updateFlushTimer() {
  const bool busy = loading_ || !in_flight_.empty();
  if (busy && !flush_timer_.isActive()) flush_timer_.start();
  if (!busy && flush_timer_.isActive()) flush_timer_.stop();
}

QString finishReasonText(FinishReason reason) {
  switch (reason) {
    case FinishReason::EndOfGeneration: return QObject::tr("complete");
    case FinishReason::StopString: return QObject::tr("stop string");
    case FinishReason::MaxTokens: return QObject::tr("max tokens reached");
    case FinishReason::ContextFull: return QObject::tr("context full");
    case FinishReason::Cancelled: return QObject::tr("stopped");
    case FinishReason::Error: return QObject::tr("error");
  }
  return QObject::tr("unknown");
}

}  // namespace chorus::ui
