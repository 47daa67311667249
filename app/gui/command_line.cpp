#include "app/gui/command_line.h"

#include <QCommandLineParser>
#include <cstdio>

namespace chorus::gui {

std::optional<CommandLine> parseCommandLine(const QStringList& arguments, int* exit_code) {
  QCommandLineParser p;
  p.setApplicationDescription("Chorus: chat with local language models, many conversations at once.");
  p.addHelpOption();
  p.addVersionOption();
  const QCommandLineOption model("model", "GGUF model to load.", "path");
  const QCommandLineOption backend("backend", "Compute backend: auto, cpu or cuda.", "name");
  const QCommandLineOption fake("fake-engine", "Use the deterministic fake engine (no model needed).");
  const QCommandLineOption fake_rate("fake-rate", "Fake engine tokens per second per chat.", "tok/s");
  const QCommandLineOption demo("demo", "Open N chats with sample prompts and run them at once.", "N");
  const QCommandLineOption shot("screenshot", "With --demo: save a screenshot when done.", "file");
  const QCommandLineOption quit("quit-after-ms", "Quit after T milliseconds.", "T");
  p.addOptions({model, backend, fake, fake_rate, demo, shot, quit});
  *exit_code = 0;
  if (!p.parse(arguments)) {
    std::fprintf(stderr, "chorus: %s\n", qPrintable(p.errorText()));
    *exit_code = 2;
    return std::nullopt;
  }
  if (p.isSet("help")) {
    std::printf("%s", qPrintable(p.helpText()));
    return std::nullopt;
  }
  if (p.isSet("version")) {
    std::printf("chorus %s\n", CHORUS_VERSION);
    return std::nullopt;
  }
  CommandLine c;
  c.model_path = p.value(model);
  c.backend = p.value(backend).toLower();
  c.fake_engine = p.isSet(fake);
  c.screenshot_path = p.value(shot);
  auto bad = [&](const QString& what) {
    std::fprintf(stderr, "chorus: %s\n", qPrintable(what));
    *exit_code = 2;
    return std::nullopt;
  };
  if (!c.backend.isEmpty() && c.backend != "auto" && c.backend != "cpu" && c.backend != "cuda")
    return bad("--backend must be auto, cpu or cuda");
  bool ok = true;
  if (p.isSet(demo) && ((c.demo_tabs = p.value(demo).toInt(&ok)), !ok || c.demo_tabs < 1 || c.demo_tabs > 64))
    return bad("--demo needs a number of chats from 1 to 64");
  if (p.isSet(quit) && ((c.quit_after_ms = p.value(quit).toInt(&ok)), !ok || c.quit_after_ms < 1))
    return bad("--quit-after-ms needs a positive number");
  if (p.isSet(fake_rate) && ((c.fake_tok_per_s = p.value(fake_rate).toDouble(&ok)), !ok ||
                             c.fake_tok_per_s <= 0 || c.fake_tok_per_s > 1e6))
    return bad("--fake-rate needs a positive number of tokens per second");
  if (!c.screenshot_path.isEmpty() && c.demo_tabs == 0) return bad("--screenshot needs --demo");
  return c;
}

}  // namespace chorus::gui
