#include "ui/app_settings.h"

namespace chorus::ui {
namespace {

int readInt(const QSettings& s, const char* key, int fallback, int lo, int hi) {
  bool ok = false;
  const int v = s.value(key).toInt(&ok);
  return ok && v >= lo && v <= hi ? v : fallback;
}

}  // namespace

QString themeName(Theme theme) { return theme == Theme::Dark ? "dark" : "light"; }

AppSettings AppSettings::load(const QSettings& s) {
  AppSettings a;
  const QString backend = s.value("engine/backend").toString().toLower();
  if (backend == "auto" || backend == "cpu" || backend == "cuda") a.backend = backend;
  a.cpu_threads = readInt(s, "engine/cpu_threads", a.cpu_threads, 0, 1024);
  a.context_tokens = readInt(s, "engine/context_tokens", a.context_tokens, 256, 1 << 20);
  a.theme = s.value("ui/theme").toString().toLower() == "dark" ? Theme::Dark : Theme::Light;
  a.font_point_size = readInt(s, "ui/font_point_size", a.font_point_size, 6, 48);
  const QVariant last = s.value("models/last");
  if (last.typeId() == QMetaType::QString) a.last_model = last.toString();
  const QVariant recent = s.value("models/recent");
  if (recent.canConvert<QStringList>())
    for (const QString& p : recent.toStringList())
      if (!p.isEmpty() && a.recent_models.size() < kMaxRecentModels) a.recent_models << p;
  return a;
}

void AppSettings::save(QSettings& s) const {
  s.setValue("engine/backend", backend);
  s.setValue("engine/cpu_threads", cpu_threads);
  s.setValue("engine/context_tokens", context_tokens);
  s.setValue("ui/theme", themeName(theme));
  s.setValue("ui/font_point_size", font_point_size);
  s.setValue("models/last", last_model);
  s.setValue("models/recent", recent_models);
  s.sync();
}

void AppSettings::addRecentModel(const QString& path) {
  recent_models.removeAll(path);
  recent_models.prepend(path);
  while (recent_models.size() > kMaxRecentModels) recent_models.removeLast();
}

}  // namespace chorus::ui
