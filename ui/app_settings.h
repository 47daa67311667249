#pragma once
// Application settings kept in QSettings. Every value is validated on load: a missing,
// malformed or out-of-range entry reads as its default, so a hand-edited or corrupt
// settings file can never stop the app from starting.
#include <QSettings>
#include <QString>
#include <QStringList>

namespace chorus::ui {

enum class Theme { Light, Dark };

struct AppSettings {
  QString backend = "auto";  // "auto", "cpu", "cuda"
  int cpu_threads = 0;       // 0: all cores
  int context_tokens = 4096;
  Theme theme = Theme::Light;
  int font_point_size = 10;
  QString last_model;        // empty: the default model
  QStringList recent_models; // most recent first

  static constexpr int kMaxRecentModels = 8;

  static AppSettings load(const QSettings& settings);
  void save(QSettings& settings) const;
  void addRecentModel(const QString& path);
  bool operator==(const AppSettings&) const = default;
};

QString themeName(Theme theme);

}  // namespace chorus::ui
