// chorus: wires the engine, the chat store, the settings and the main window together.
// Everything is created here and passed down; nothing in ui/ reaches for a global.
#include <QApplication>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <cstdio>
#include <memory>
#include <string_view>

#include "app/gui/command_line.h"
#include "app/gui/engine_factory.h"
#include "ui/chat_store.h"
#include "ui/demo_runner.h"
#include "ui/engine_bridge.h"
#include "ui/main_window.h"
#include "ui/theme.h"
#include "ui/user_prompts.h"

namespace {

// A fatal startup error: a dialog for people, stderr for scripts (demo runs).
int fail(const QString& title, const QString& message, bool headless) {
  std::fprintf(stderr, "chorus: %s: %s\n", qPrintable(title), qPrintable(message));
  if (!headless) QMessageBox::critical(nullptr, title, message);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // --version must work without a display, so it is answered before QApplication exists.
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--version") {
      std::printf("chorus %s\n", CHORUS_VERSION);
      return 0;
    }
  QApplication app(argc, argv);
  QApplication::setApplicationName("chorus");
  QApplication::setApplicationDisplayName("Chorus");
  QApplication::setOrganizationName("chorus");
  QApplication::setApplicationVersion(CHORUS_VERSION);
  QApplication::setWindowIcon(QIcon(":/icons/chorus.svg"));
  int exit_code = 0;
  const auto cmd = chorus::gui::parseCommandLine(QApplication::arguments(), &exit_code);
  if (!cmd) return exit_code;
  const bool demo = cmd->demo_tabs > 0;

  // Data: CHORUS_DATA_DIR (tests), else a throw-away folder for demos, else XDG data.
  QString data_dir = qEnvironmentVariable("CHORUS_DATA_DIR");
  QTemporaryDir demo_dir;
  if (data_dir.isEmpty())
    data_dir = demo ? demo_dir.path() : QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  const bool private_dir = demo || qEnvironmentVariableIsSet("CHORUS_DATA_DIR");
  std::unique_ptr<QSettings> settings =
      private_dir ? std::make_unique<QSettings>(data_dir + "/settings.ini", QSettings::IniFormat)
                  : std::make_unique<QSettings>();
  const chorus::ui::AppSettings app_settings = chorus::ui::AppSettings::load(*settings);
  chorus::ui::applyTheme(app, app_settings.theme, app_settings.font_point_size);

  QString error;
  chorus::gui::EngineChoice choice;
  choice.fake = cmd->fake_engine;
  choice.fake_tok_per_s = cmd->fake_tok_per_s;
  choice.fake_trace_tokens = qEnvironmentVariable("CHORUS_FAKE_TRACE") == "1";
  std::unique_ptr<chorus::EngineApi> engine = chorus::gui::makeEngine(choice);

  chorus::ui::ChatStore store;
  if (!store.open(data_dir, &error)) return fail(QObject::tr("Cannot open the chat database"), error, demo);
  chorus::ui::EngineBridge bridge(*engine);
  chorus::ui::DialogPrompts prompts;
  chorus::ui::MainWindowOptions options;
  options.model_override = cmd->model_path;
  options.backend_override = cmd->backend;
  options.fake_engine = cmd->fake_engine;
  chorus::ui::MainWindow window(bridge, store, *settings, prompts, options);
  prompts.setParentWidget(&window);
  window.restoreConversations();
  window.show();
  window.loadInitialModel();

  std::unique_ptr<chorus::ui::DemoRunner> runner;
  if (demo) {
    chorus::ui::DemoOptions d;
    d.n_tabs = cmd->demo_tabs;
    d.screenshot_path = cmd->screenshot_path;
    d.quit_after_ms = cmd->quit_after_ms;
    runner = std::make_unique<chorus::ui::DemoRunner>(window, bridge, d);
    QObject::connect(runner.get(), &chorus::ui::DemoRunner::finished, &app,
                     [](int code) { QApplication::exit(code); });
    runner->start();
  } else if (cmd->quit_after_ms > 0) {
    QTimer::singleShot(cmd->quit_after_ms, &app, [&window] { window.close(); QApplication::quit(); });
  }
  return app.exec();
}
