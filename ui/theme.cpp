#include "ui/theme.h"

#include <QApplication>
#include <QFont>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

namespace chorus::ui {
namespace {

QPalette darkPalette() {
  QPalette p;
  const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, window);
  p.setColor(QPalette::ToolTipBase, base);
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xff));
  p.setColor(QPalette::Highlight, QColor(0x35, 0x74, 0xf0));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
  p.setColor(QPalette::Mid, QColor(0x80, 0x80, 0x80));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x70, 0x70, 0x70));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x70, 0x70, 0x70));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x70, 0x70, 0x70));
  return p;
}

}  // namespace

void applyTheme(QApplication& app, Theme theme, int font_point_size) {
  app.setStyle(QStyleFactory::create("Fusion"));
  QPalette palette = theme == Theme::Dark ? darkPalette() : app.style()->standardPalette();
  app.setPalette(palette);
  QFont font = app.font();
  font.setPointSize(font_point_size);
  app.setFont(font);
  // User messages sit on a tinted card so turns are easy to tell apart in both themes.
  const QString card = theme == Theme::Dark ? "#33363c" : "#eef3fb";
  app.setStyleSheet(QString("QFrame#message[role=\"user\"] { background: %1; border-radius: 6px; }"
                            "QFrame#message[role=\"assistant\"] { border-radius: 6px; }")
                        .arg(card));
}

}  // namespace chorus::ui
