#include "ui/markdown_render.h"

#include <QFontDatabase>
#include <QRegularExpression>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>

namespace chorus::ui {

bool isCodeBlock(const QTextBlock& block) {
  const QTextBlockFormat f = block.blockFormat();
  return f.hasProperty(QTextFormat::BlockCodeFence) || f.hasProperty(QTextFormat::BlockCodeLanguage);
}

void renderMarkdown(QTextDocument& doc, const QString& markdown, const QPalette& palette) {
  doc.setMarkdown(markdown, QTextDocument::MarkdownDialectGitHub);
  const QColor base = palette.color(QPalette::Base);
  const QColor shade = base.lightness() > 128 ? base.darker(108) : base.lighter(140);
  const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  QTextCursor cursor(&doc);
  for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
    if (!isCodeBlock(b)) continue;
    cursor.setPosition(b.position());
    QTextBlockFormat bf = b.blockFormat();
    bf.setBackground(shade);
    bf.setNonBreakableLines(false);  // wrap long code lines rather than clip them
    bf.setLeftMargin(6);
    cursor.setBlockFormat(bf);
    cursor.setPosition(b.position() + b.length() - 1, QTextCursor::KeepAnchor);
    QTextCharFormat cf;
    cf.setFont(mono);
    cursor.mergeCharFormat(cf);
  }
}

QString codeBlockTextAt(const QTextBlock& block) {
  if (!isCodeBlock(block)) return {};
  QTextBlock first = block;
  while (first.previous().isValid() && isCodeBlock(first.previous())) first = first.previous();
  QStringList lines;
  for (QTextBlock b = first; b.isValid() && isCodeBlock(b); b = b.next()) lines << b.text();
  return lines.join('\n');
}

QStringList extractCodeBlocks(const QString& markdown) {
  static const QRegularExpression fence(R"(^ {0,3}(`{3,}|~{3,}))");
  QStringList blocks;
  QStringList lines;  // of the block being read
  QString opener;     // its fence; empty when outside a block
  for (const QString& line : markdown.split('\n')) {
    const QRegularExpressionMatch m = fence.match(line);
    if (opener.isEmpty()) {
      if (m.hasMatch()) {
        opener = m.captured(1);
        lines.clear();
      }
    } else if (m.hasMatch() && m.captured(1).startsWith(opener) &&
               line.trimmed() == m.captured(1)) {
      blocks << lines.join('\n');
      opener.clear();
    } else {
      lines << line;
    }
  }
  if (!opener.isEmpty()) blocks << lines.join('\n');
  return blocks;
}

}  // namespace chorus::ui
