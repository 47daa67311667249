#pragma once
// Markdown for chat messages: QTextDocument's own CommonMark/GFM importer does the parsing;
// this adds the look (shaded monospace code blocks that wrap) and code-block extraction for
// the "copy code" actions.
#include <QPalette>
#include <QString>
#include <QStringList>

class QTextDocument;
class QTextBlock;

namespace chorus::ui {

void renderMarkdown(QTextDocument& doc, const QString& markdown, const QPalette& palette);

// True when `block` is a line of a (fenced or indented) code block.
bool isCodeBlock(const QTextBlock& block);
// The text of the code block containing `block` (its contiguous code lines).
QString codeBlockTextAt(const QTextBlock& block);

// The bodies of the fenced code blocks of `markdown`, in order. An unclosed fence (a reply
// still streaming) runs to the end of the text, as CommonMark says.
QStringList extractCodeBlocks(const QString& markdown);

}  // namespace chorus::ui
