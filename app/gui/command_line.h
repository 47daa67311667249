#pragma once
// The command line of `chorus`.
#include <QString>
#include <QStringList>
#include <optional>

namespace chorus::gui {

struct CommandLine {
  QString model_path;       // --model
  QString backend;          // --backend auto|cpu|cuda
  bool fake_engine = false; // --fake-engine
  double fake_tok_per_s = 200.0;  // --fake-rate: tokens per second per chat
  int demo_tabs = 0;        // --demo N
  QString screenshot_path;  // --screenshot FILE
  int quit_after_ms = 0;    // --quit-after-ms T
};

// Parses QCoreApplication's arguments. Handles --help and --version itself (prints and
// returns nullopt with *exit_code 0); a bad value prints a message and gives exit code 2.
std::optional<CommandLine> parseCommandLine(const QStringList& arguments, int* exit_code);

}  // namespace chorus::gui
