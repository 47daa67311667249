#pragma once
// The live performance panel (a dock, F9): aggregate decode speed over the last minute,
// batch size M, per-tab speed and time to first token, where a step's time goes, prefill
// speed, KV cache and device memory use, backend/device and CUDA graph counters.
#include <QDockWidget>
#include <QElapsedTimer>
#include <QPointF>
#include <QVector>

#include "engine/sched/engine_api.h"

class QBarSet;
class QChartView;
class QLabel;
class QLineSeries;
class QProgressBar;
class QTableWidget;
class QValueAxis;

namespace chorus::ui {

struct TabPerfRow {
  QString title;
  bool streaming = false;
  double decode_tok_per_s = 0.0;
  double ttft_ms = 0.0;
  int32_t n_generated = 0;
};

class PerfPanel : public QDockWidget {
  Q_OBJECT
 public:
  static constexpr double kHistorySeconds = 60.0;

  explicit PerfPanel(QWidget* parent = nullptr);
  void updateStats(const StatsSnapshot& stats, const QVector<TabPerfRow>& tabs);
  int historyPointCount() const { return int(history_.size()); }

 private:
  QWidget* buildSummary();
  QChartView* buildSpeedChart();
  QChartView* buildPhaseChart();
  void updateSummary(const StatsSnapshot& s);
  void updateSpeedChart(const StatsSnapshot& s);
  void updatePhases(const StatsSnapshot& s);
  void updateTabs(const QVector<TabPerfRow>& tabs);

  QElapsedTimer clock_;
  QVector<QPointF> history_;  // (seconds since panel start, aggregate tok/s)
  QLabel* device_;
  QLabel* batch_;
  QLabel* speed_;
  QLabel* prefill_;
  QLabel* steps_;
  QLabel* graphs_;
  QProgressBar* kv_;
  QProgressBar* vram_;
  QLineSeries* speed_series_;
  QValueAxis* speed_axis_y_;
  QVector<QBarSet*> phase_sets_;
  QVector<QLabel*> phase_labels_;
  QValueAxis* phase_axis_;
  QTableWidget* tabs_;
};

}  // namespace chorus::ui
