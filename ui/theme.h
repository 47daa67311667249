#pragma once
// Light and dark looks (Fusion style with a palette, so both look alike on every desktop).
#include "ui/app_settings.h"

class QApplication;

namespace chorus::ui {

void applyTheme(QApplication& app, Theme theme, int font_point_size);

}  // namespace chorus::ui
