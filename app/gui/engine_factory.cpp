#include "app/gui/engine_factory.h"

#include "engine/sched/default_engine.h"
#include "ui/fake_engine.h"

namespace chorus::gui {

std::unique_ptr<EngineApi> makeEngine(const EngineChoice& choice) {
  if (choice.fake) {
    ui::FakeEngineOptions o;
    o.step_interval_us = int64_t(1e6 / choice.fake_tok_per_s);
    o.trace_tokens = choice.fake_trace_tokens;
    return std::make_unique<ui::FakeEngine>(o);
  }
  // The real engine: CPU backend, CUDA when its library and a device are present. The
  // model itself is loaded later, on the bridge's worker thread.
  return make_default_engine();
}

}  // namespace chorus::gui
