#include "app/gui/engine_factory.h"

#include <QObject>

#include "ui/fake_engine.h"

namespace chorus::gui {

std::unique_ptr<EngineApi> makeEngine(const EngineChoice& choice, QString* error) {
  if (choice.fake) {
    ui::FakeEngineOptions o;
    o.step_interval_us = int64_t(1e6 / choice.fake_tok_per_s);
    o.trace_tokens = choice.fake_trace_tokens;
    return std::make_unique<ui::FakeEngine>(o);
  }
  *error = QObject::tr("This build has no inference engine yet; run with --fake-engine.");
  return nullptr;
}

}  // namespace chorus::gui
