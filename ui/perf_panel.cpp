#include "ui/perf_panel.h"

#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QFormLayout>
#include <QGridLayout>
#include <QHeaderView>
#include <QHorizontalStackedBarSeries>
#include <QLabel>
#include <QBarCategoryAxis>
#include <QLineSeries>
#include <QProgressBar>
#include <QScrollArea>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

namespace chorus::ui {
namespace {

// "prefill" is the prompt chunks computed in a step after its decode call: apart, so that a
// new tab's prompt shows as such rather than as a slower forward pass.
const char* const kPhaseNames[] = {"schedule", "upload",  "forward",    "sample",
                                   "download", "prefill", "detokenize", "deliver"};
const QColor kPhaseColors[] = {QColor(0x8e, 0x8e, 0x93), QColor(0x5a, 0xc8, 0xfa),
                               QColor(0x34, 0x7d, 0xf6), QColor(0xff, 0x9f, 0x0a),
                               QColor(0xaf, 0x52, 0xde), QColor(0xff, 0xd6, 0x0a),
                               QColor(0x34, 0xc7, 0x59), QColor(0xff, 0x37, 0x5f)};
static_assert(std::size(kPhaseNames) == std::size(kPhaseColors));

QString gib(int64_t bytes) { return QString::number(bytes / double(1ll << 30), 'f', 2) + " GiB"; }

void setBar(QProgressBar* bar, int64_t used, int64_t total, const QString& text) {
  bar->setRange(0, 1000);
  bar->setValue(total > 0 ? int(1000.0 * double(used) / double(total)) : 0);
  bar->setFormat(text);
}

QChartView* makeChartView(QChart* chart, int min_height) {
  chart->setMargins(QMargins(2, 2, 2, 2));
  chart->setBackgroundRoundness(0);
  auto* view = new QChartView(chart);
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumHeight(min_height);
  return view;
}

}  // namespace

PerfPanel::PerfPanel(QWidget* parent) : QDockWidget(tr("Performance"), parent) {
  setObjectName("perfPanel");
  clock_.start();
  auto* content = new QWidget;
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(buildSummary());
  layout->addWidget(buildSpeedChart());
  layout->addWidget(buildPhaseChart());
  auto* legend = new QGridLayout;
  legend->setContentsMargins(8, 0, 8, 0);
  for (size_t i = 0; i < std::size(kPhaseNames); ++i) {
    auto* label = new QLabel(content);
    phase_labels_.push_back(label);
    legend->addWidget(label, int(i) / 2, int(i) % 2);
  }
  layout->addLayout(legend);
  tabs_ = new QTableWidget(0, 5, content);
  tabs_->setHorizontalHeaderLabels({tr("Tab"), tr("State"), tr("tok/s"), tr("TTFT ms"), tr("Tokens")});
  tabs_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  for (int c = 1; c < 5; ++c) tabs_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  tabs_->verticalHeader()->hide();
  tabs_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  tabs_->setMinimumHeight(140);
  layout->addWidget(tabs_, 1);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setWidget(content);
  setWidget(scroll);
  setMinimumWidth(420);
}

QWidget* PerfPanel::buildSummary() {
  auto* box = new QWidget;
  auto* form = new QFormLayout(box);
  form->setContentsMargins(0, 0, 0, 0);
  auto add = [&](const QString& label) {
    auto* l = new QLabel("—", box);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->setWordWrap(true);
    form->addRow(label, l);
    return l;
  };
  device_ = add(tr("Backend"));
  batch_ = add(tr("Batch M"));
  speed_ = add(tr("Decode"));
  prefill_ = add(tr("Prefill"));
  steps_ = add(tr("Steps"));
  graphs_ = add(tr("CUDA graphs"));
  kv_ = new QProgressBar(box);
  form->addRow(tr("KV cache"), kv_);
  vram_ = new QProgressBar(box);
  form->addRow(tr("VRAM"), vram_);
  return box;
}

QChartView* PerfPanel::buildSpeedChart() {
  auto* chart = new QChart;
  chart->setTitle(tr("Aggregate decode tok/s, last minute"));
  chart->legend()->hide();
  speed_series_ = new QLineSeries(chart);
  speed_series_->setPen(QPen(kPhaseColors[2], 2));
  chart->addSeries(speed_series_);
  auto* x = new QValueAxis(chart);
  x->setRange(-kHistorySeconds, 0);
  x->setLabelFormat("%d s");
  x->setTickCount(7);
  speed_axis_y_ = new QValueAxis(chart);
  speed_axis_y_->setRange(0, 10);
  speed_axis_y_->setLabelFormat("%.0f");
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(speed_axis_y_, Qt::AlignLeft);
  speed_series_->attachAxis(x);
  speed_series_->attachAxis(speed_axis_y_);
  return makeChartView(chart, 180);
}

QChartView* PerfPanel::buildPhaseChart() {
  auto* chart = new QChart;
  chart->setTitle(tr("Mean step time by phase (µs)"));
  auto* series = new QHorizontalStackedBarSeries(chart);
  for (size_t i = 0; i < std::size(kPhaseNames); ++i) {
    auto* set = new QBarSet(kPhaseNames[i], series);
    set->setColor(kPhaseColors[i]);
    set->setBorderColor(kPhaseColors[i]);
    *set << 0;
    series->append(set);
    phase_sets_.push_back(set);
  }
  series->setBarWidth(0.8);
  chart->addSeries(series);
  auto* cats = new QBarCategoryAxis(chart);
  cats->append(tr("step"));
  phase_axis_ = new QValueAxis(chart);
  phase_axis_->setRange(0, 100);
  phase_axis_->setLabelFormat("%.0f");
  chart->addAxis(cats, Qt::AlignLeft);
  chart->addAxis(phase_axis_, Qt::AlignBottom);
  series->attachAxis(cats);
  series->attachAxis(phase_axis_);
  chart->legend()->hide();  // the grid below has room for names and numbers
  return makeChartView(chart, 120);
}

void PerfPanel::updateStats(const StatsSnapshot& s, const QVector<TabPerfRow>& tabs) {
  updateSummary(s);
  updateSpeedChart(s);
  updatePhases(s);
  updateTabs(tabs);
}

void PerfPanel::updateSummary(const StatsSnapshot& s) {
  device_->setText(s.model_loaded ? QString("%1 · %2\n%3")
                                        .arg(QString::fromStdString(s.backend_name),
                                             QString::fromStdString(s.device_name),
                                             QString::fromStdString(s.model_name))
                                  : tr("no model loaded"));
  batch_->setText(tr("%1 now · %2 max · %3 running, %4 waiting")
                      .arg(s.current_batch).arg(s.max_batch_seen).arg(s.n_running).arg(s.n_waiting));
  speed_->setText(tr("%1 tok/s aggregate").arg(s.aggregate_tok_per_s, 0, 'f', 1));
  prefill_->setText(s.prefill_tok_per_s > 0 ? tr("%1 tok/s while computing prompts").arg(s.prefill_tok_per_s, 0, 'f', 1)
                                            : tr("no prompt in the last few seconds"));
  steps_->setText(tr("%1 steps · %2 tokens · %3 ms/step")
                      .arg(s.n_steps).arg(s.n_tokens_generated)
                      .arg(s.mean_step.step_us / 1000.0, 0, 'f', 2));
  graphs_->setText(tr("%1 replays · %2 captures").arg(s.graph_replays).arg(s.graph_captures));
  setBar(kv_, s.kv_blocks_used, s.kv_blocks_total,
         tr("%1 / %2 blocks (%p%)").arg(s.kv_blocks_used).arg(s.kv_blocks_total));
  if (s.device_total_bytes > 0) {
    const int64_t used = s.device_total_bytes - s.device_free_bytes;
    setBar(vram_, used, s.device_total_bytes, tr("%1 / %2").arg(gib(used), gib(s.device_total_bytes)));
  } else {
    setBar(vram_, 0, 0, tr("host memory"));
  }
  vram_->setToolTip(tr("weights %1, KV cache %2").arg(gib(s.weights_bytes), gib(s.kv_cache_bytes)));
}

void PerfPanel::updateSpeedChart(const StatsSnapshot& s) {
  const double now = clock_.elapsed() / 1000.0;
  history_.push_back({now, s.aggregate_tok_per_s});
  while (!history_.isEmpty() && history_.front().x() < now - kHistorySeconds) history_.pop_front();
  QList<QPointF> points;
  points.reserve(history_.size());
  double peak = 0;
  for (const QPointF& p : history_) {
    points.push_back({p.x() - now, p.y()});
    peak = std::max(peak, p.y());
  }
  speed_series_->replace(points);
  // Round the axis up to a 1-2-5 step so it does not jitter with every sample.
  const double want = std::max(10.0, peak * 1.1);
  const double mag = std::pow(10.0, std::floor(std::log10(want)));
  const double top = want <= 2 * mag ? 2 * mag : want <= 5 * mag ? 5 * mag : 10 * mag;
  if (speed_axis_y_->max() != top) speed_axis_y_->setRange(0, top);
}

void PerfPanel::updatePhases(const StatsSnapshot& s) {
  const StepPhaseTimes& t = s.mean_step;
  const double us[] = {t.schedule_us, t.upload_us,     t.forward_us, t.sample_us,
                       t.download_us, t.prefill_us,    t.detokenize_us, t.deliver_us};
  static_assert(std::size(us) == std::size(kPhaseNames));
  double total = 0;
  for (size_t i = 0; i < std::size(us); ++i) {
    phase_sets_[int(i)]->replace(0, us[i]);
    phase_labels_[int(i)]->setText(QString("<span style='color:%1'>\u25A0</span> %2: %3 µs")
                                       .arg(kPhaseColors[i].name(), kPhaseNames[i])
                                       .arg(us[i], 0, 'f', 0));
    total += us[i];
  }
  const double want = std::max(100.0, total * 1.05);
  if (phase_axis_->max() < want || phase_axis_->max() > 2 * want) {
    phase_axis_->setRange(0, want * 1.3);
    phase_axis_->applyNiceNumbers();
  }
}

void PerfPanel::updateTabs(const QVector<TabPerfRow>& tabs) {
  tabs_->setRowCount(int(tabs.size()));
  auto set = [this](int row, int col, const QString& text) {
    QTableWidgetItem* item = tabs_->item(row, col);
    if (!item) {
      item = new QTableWidgetItem;
      if (col > 1) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      tabs_->setItem(row, col, item);
    }
    if (item->text() != text) item->setText(text);
  };
  for (int r = 0; r < tabs.size(); ++r) {
    const TabPerfRow& row = tabs[r];
    set(r, 0, row.title);
    set(r, 1, row.streaming ? tr("streaming") : tr("idle"));
    set(r, 2, row.n_generated > 0 ? QString::number(row.decode_tok_per_s, 'f', 1) : "—");
    set(r, 3, row.n_generated > 0 ? QString::number(row.ttft_ms, 'f', 0) : "—");
    set(r, 4, QString::number(row.n_generated));
  }
}

}  // namespace chorus::ui
