// The main window's tabs and a tab's conversation flow, on the fake engine.
#include <QtTest>
#include <QLabel>
#include <QTabBar>
#include <QTabWidget>
#include <QTextBlock>
#include <QTextDocument>

#include "ui/chat_input.h"
#include "ui/markdown_render.h"
#include "ui/message_view.h"
#include "ui/message_widget.h"
#include "ui/perf_panel.h"
#include "ui_test_support.h"

using namespace chorus;
using namespace chorus::ui;
using namespace chorus::ui::test;

class TestChatTabs : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void newCloseRenameWithShortcuts();
  void reorderIsPersisted();
  void closedChatCanBeReopened();
  void backgroundTabsKeepStreaming();
  void enterSendsShiftEnterBreaksLine();
  void stopEndsTheReply();
  void regenerateReplacesLastReply();
  void editAndResendDiscardsLaterTurns();
  void chatSettingsReachTheRequest();
  void sendWithoutModelExplains();
  void promptPastTheContextExplains();
  void markdownCodeBlocks();
  void perfPanelShowsStats();
  void staysResponsiveAt20kTokensPerSecond();
};

void TestChatTabs::newCloseRenameWithShortcuts() {
  AppFixture app;
  MainWindow& w = app.makeWindow();
  QCOMPARE(w.tabCount(), 1);
  QTest::keyClick(&w, Qt::Key_T, Qt::ControlModifier);
  QTest::keyClick(&w, Qt::Key_T, Qt::ControlModifier);
  QCOMPARE(w.tabCount(), 3);
  QCOMPARE(w.tabWidget()->currentIndex(), 2);
  QTest::keyClick(&w, Qt::Key_Tab, Qt::ControlModifier);
  QCOMPARE(w.tabWidget()->currentIndex(), 0);
  w.renameTab(0, "Alpha");
  QCOMPARE(w.tabWidget()->tabText(0), QString("Alpha"));
  app.prompts.next_text = "Beta";
  QTest::keyClick(&w, Qt::Key_F2);  // rename through the prompt
  QCOMPARE(w.tabWidget()->tabText(0), QString("Beta"));
  QTest::keyClick(&w, Qt::Key_W, Qt::ControlModifier);
  QCOMPARE(w.tabCount(), 2);
  w.closeTab(0);
  w.closeTab(0);
  QCOMPARE(w.tabCount(), 1);  // closing the last chat leaves a fresh one
  QCOMPARE(app.store.loadOpenConversations().size(), 1);
}

void TestChatTabs::reorderIsPersisted() {
  AppFixture app;
  MainWindow& w = app.makeWindow();
  w.renameTab(0, "one");
  w.newTab();
  w.renameTab(1, "two");
  w.newTab();
  w.renameTab(2, "three");
  QVERIFY(w.tabWidget()->isMovable());
  w.tabWidget()->tabBar()->moveTab(0, 2);
  QCOMPARE(w.tab(2)->title(), QString("one"));
  const auto convs = app.store.loadOpenConversations();
  QCOMPARE(convs.size(), 3);
  QCOMPARE(convs[0].title, QString("two"));
  QCOMPARE(convs[1].title, QString("three"));
  QCOMPARE(convs[2].title, QString("one"));
}

void TestChatTabs::closedChatCanBeReopened() {
  AppFixture app;
  MainWindow& w = app.makeWindow();
  w.renameTab(0, "keep me");
  w.newTab();
  w.closeTab(0);
  QCOMPARE(w.tabCount(), 1);
  QVERIFY(w.reopenClosedTab());
  QCOMPARE(w.tabCount(), 2);
  QCOMPARE(w.currentTab()->title(), QString("keep me"));
}

void TestChatTabs::backgroundTabsKeepStreaming() {
  AppFixture app({.step_interval_us = 2000});
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  ChatTab* a = w.currentTab();
  ChatTab* b = w.newTab();
  ChatSettings s = a->settings();
  s.max_tokens = 60;
  a->setSettings(s);
  b->setSettings(s);
  w.tabWidget()->setCurrentWidget(a);
  QVERIFY(a->send("first question"));
  w.tabWidget()->setCurrentWidget(b);
  QVERIFY(b->send("second question"));
  QVERIFY(a->isStreaming() && b->isStreaming());
  QVERIFY(!w.tabWidget()->tabIcon(0).isNull());  // the streaming marker
  const int64_t hidden_renders = a->view()->renderCount();
  QVERIFY(waitFor([&] { return w.tabHasUnreadMarker(0); }));
  QVERIFY(app.waitIdle(a) && app.waitIdle(b));
  QCOMPARE(a->view()->renderCount(), hidden_renders + 1);  // only the final update
  QCOMPARE(a->conversation().messages.last().content, fakeReplyPrefix("first question", 60));
  QCOMPARE(b->conversation().messages.last().content, fakeReplyPrefix("second question", 60));
  QVERIFY(app.engine.stats().max_batch_seen >= 2);  // they ran in the same steps
  QVERIFY(!w.tabWidget()->tabIcon(0).isNull());     // unread marker stays until shown
  w.tabWidget()->setCurrentIndex(0);
  QVERIFY(!w.tabHasUnreadMarker(0));
  QVERIFY(w.tabWidget()->tabIcon(0).isNull());
  QVERIFY(a->view()->messageWidget(1)->body()->toPlainText().contains("first question"));
}

void TestChatTabs::enterSendsShiftEnterBreaksLine() {
  AppFixture app;
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  ChatTab* t = w.currentTab();
  t->input()->setFocus();
  QTest::keyClicks(t->input(), "line one");
  QTest::keyClick(t->input(), Qt::Key_Return, Qt::ShiftModifier);
  QTest::keyClicks(t->input(), "line two");
  QCOMPARE(t->input()->toPlainText(), QString("line one\nline two"));
  QTest::keyClick(t->input(), Qt::Key_Return);
  QVERIFY(t->input()->toPlainText().isEmpty());
  QCOMPARE(t->conversation().messages.first().content, QString("line one\nline two"));
  QVERIFY(app.waitIdle(t));
}

void TestChatTabs::stopEndsTheReply() {
  AppFixture app({.step_interval_us = 10000});
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  ChatTab* t = w.currentTab();
  QVERIFY(t->send("tell me a long story"));
  QVERIFY(waitFor([&] { return t->conversation().messages.last().content.size() > 20; }));
  t->stop();
  QVERIFY(app.waitIdle(t, 2000));
  const Message& m = t->conversation().messages.last();
  QCOMPARE(m.state, MessageState::Stopped);
  QVERIFY(m.content.size() > 20);
  QVERIFY(m.content.size() < fakeReplyPrefix("tell me a long story", 512).size());
  QVERIFY(fakeReplyPrefix("tell me a long story", 512).startsWith(m.content));
}

void TestChatTabs::regenerateReplacesLastReply() {
  AppFixture app({.step_interval_us = 200});
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  ChatTab* t = w.currentTab();
  QVERIFY(t->send("hello"));
  QVERIFY(app.waitIdle(t));
  QVERIFY(t->regenerate());
  QCOMPARE(t->conversation().messages.size(), 2);
  QVERIFY(app.waitIdle(t));
  const auto requests = app.engine.submitted_requests();
  QCOMPARE(requests.size(), size_t(2));
  QCOMPARE(requests[1].messages.size(), size_t(1));  // the old reply was not sent back
  QCOMPARE(requests[1].messages[0].content, std::string("hello"));
  QCOMPARE(app.store.loadOpenConversations()[0].messages.size(), 2);
}

void TestChatTabs::editAndResendDiscardsLaterTurns() {
  AppFixture app({.step_interval_us = 200});
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  ChatTab* t = w.currentTab();
  QVERIFY(t->send("first"));
  QVERIFY(app.waitIdle(t));
  QVERIFY(t->send("second"));
  QVERIFY(app.waitIdle(t));
  QCOMPARE(t->conversation().messages.size(), 4);
  app.prompts.answer = false;  // the user cancels: nothing changes
  QVERIFY(!t->editAndResend(0, "first, edited"));
  QCOMPARE(t->conversation().messages.size(), 4);
  QVERIFY(app.prompts.questions.last().contains("3 later"));
  app.prompts.answer = true;
  t->beginEdit(0);
  QVERIFY(t->findChild<QWidget*>("editBanner")->isVisibleTo(t));
  QVERIFY(t->editAndResend(0, "first, edited"));
  QCOMPARE(t->conversation().messages.size(), 2);
  QCOMPARE(t->conversation().messages[0].content, QString("first, edited"));
  QVERIFY(app.waitIdle(t));
  const Request last = app.engine.submitted_requests().back();
  QCOMPARE(last.messages.size(), size_t(1));
  QCOMPARE(last.messages[0].content, std::string("first, edited"));
  const auto stored = app.store.loadOpenConversations()[0].messages;
  QCOMPARE(stored.size(), 2);
  QCOMPARE(stored[0].content, QString("first, edited"));
}

void TestChatTabs::chatSettingsReachTheRequest() {
  AppFixture app({.step_interval_us = 200});
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  ChatTab* t = w.currentTab();
  ChatSettings s;
  s.system_prompt = "You are terse.";
  s.temperature = 1.25;
  s.top_k = 17;
  s.top_p = 0.5;
  s.min_p = 0.125;
  s.repeat_penalty = 1.5;
  s.seed = 4242;
  s.max_tokens = 7;
  t->setSettings(s);
  QVERIFY(t->send("hi"));
  QVERIFY(app.waitIdle(t));
  const Request r = app.engine.submitted_requests().back();
  QCOMPARE(r.messages.size(), size_t(2));
  QCOMPARE(r.messages[0].role, std::string("system"));
  QCOMPARE(r.messages[0].content, std::string("You are terse."));
  QCOMPARE(r.sampling.temperature, 1.25f);
  QCOMPARE(r.sampling.top_k, 17);
  QCOMPARE(r.sampling.top_p, 0.5f);
  QCOMPARE(r.sampling.min_p, 0.125f);
  QCOMPARE(r.sampling.repeat_penalty, 1.5f);
  QCOMPARE(r.sampling.seed, uint64_t(4242));
  QCOMPARE(r.max_tokens, 7);
  QCOMPARE(t->conversation().messages.last().content, fakeReplyPrefix("hi", 7));
  QCOMPARE(app.store.loadOpenConversations()[0].settings, s);
}

void TestChatTabs::sendWithoutModelExplains() {
  AppFixture app;
  MainWindow& w = app.makeWindow();
  QVERIFY(!w.currentTab()->send("hello?"));
  QCOMPARE(app.prompts.errors.size(), 1);
  QVERIFY(app.prompts.errors[0].contains("No model"));
  QVERIFY(w.currentTab()->conversation().messages.isEmpty());
}

void TestChatTabs::promptPastTheContextExplains() {
  AppFixture app({.step_interval_us = 200});
  app.settings.setValue("engine/context_tokens", 256);
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  QCOMPARE(app.engine.last_load_options().context_tokens, 256);
  ChatTab* t = w.currentTab();
  QStringList words;
  for (int i = 0; i < 300; ++i) words << QString("word%1").arg(i);
  const QString long_text = words.join(' ');
  QVERIFY(t->send(long_text));
  QVERIFY(app.waitIdle(t));
  QCOMPARE(t->conversation().messages.size(), 2);
  const Message& reply = t->conversation().messages[1];
  QCOMPARE(reply.state, MessageState::Failed);
  QVERIFY2(reply.note.contains("no longer fits the model's context"), qPrintable(reply.note));
  QVERIFY2(reply.note.contains("Context size"), qPrintable(reply.note));
  // Nothing is lost: the user's text is stored, and a short chat still answers.
  const auto stored = app.store.loadOpenConversations();
  QCOMPARE(stored[0].messages[0].content, long_text);
  QCOMPARE(stored[0].messages[1].state, MessageState::Failed);
  QTest::keyClick(&w, Qt::Key_T, Qt::ControlModifier);
  ChatTab* fresh = w.currentTab();
  QVERIFY(fresh != t);
  QVERIFY(fresh->send("hi"));
  QVERIFY(app.waitIdle(fresh));
  QCOMPARE(fresh->conversation().messages[1].state, MessageState::Complete);
  QVERIFY(!fresh->conversation().messages[1].content.isEmpty());
  QVERIFY(!fresh->conversation().messages[1].note.contains("fits"));
}

void TestChatTabs::markdownCodeBlocks() {
  const QString md = "# Title\n\n- a\n- b\n\n```cpp\nint x = 1;\nint y = 2;\n```\n\ntext\n\n~~~\nsecond\n~~~\n";
  QCOMPARE(extractCodeBlocks(md), QStringList({"int x = 1;\nint y = 2;", "second"}));
  QCOMPARE(extractCodeBlocks("```\nunterminated\nstill"), QStringList({"unterminated\nstill"}));
  QTextDocument doc;
  renderMarkdown(doc, md, QPalette());
  int n_code = 0;
  QString first_code;
  for (QTextBlock b = doc.begin(); b.isValid(); b = b.next())
    if (isCodeBlock(b)) {
      if (n_code++ == 0) first_code = codeBlockTextAt(b);
      QVERIFY(QFontInfo(b.charFormat().font()).fixedPitch() || b.charFormat().fontFixedPitch() ||
              b.begin().fragment().charFormat().font().fixedPitch() ||
              QFontInfo(b.begin().fragment().charFormat().font()).fixedPitch());
    }
  QCOMPARE(n_code, 3);
  QCOMPARE(first_code, QString("int x = 1;\nint y = 2;"));
  QVERIFY(doc.toPlainText().contains("Title"));
  QVERIFY(doc.begin().blockFormat().headingLevel() == 1);
}

void TestChatTabs::perfPanelShowsStats() {
  AppFixture app({.step_interval_us = 1000});
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  QVERIFY(w.perfPanel()->isVisible());
  QVERIFY(w.currentTab()->send("numbers please"));
  QVERIFY(app.waitIdle(w.currentTab()));
  QTest::qWait(450);
  QVERIFY(w.perfPanel()->historyPointCount() >= 2);
  const QList<QLabel*> labels = w.perfPanel()->findChildren<QLabel*>();
  bool saw_backend = false;
  for (QLabel* l : labels) saw_backend |= l->text().contains("deterministic fake device");
  QVERIFY(saw_backend);
  QTest::keyClick(&w, Qt::Key_F9);
  QVERIFY(!w.perfPanel()->isVisible());
  QTest::keyClick(&w, Qt::Key_F9);
  QVERIFY(w.perfPanel()->isVisible());
}

void TestChatTabs::staysResponsiveAt20kTokensPerSecond() {
  // 20 chats at up to 4,000 tok/s each. The GUI thread must keep serving a 10 ms timer.
  FakeEngineOptions o;
  o.step_interval_us = 2000;
  o.tokens_per_step = 8;
  o.filler_sentences = 4000;  // long enough to stream through the whole measurement
  AppFixture app(o);
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  QVector<ChatTab*> tabs{w.currentTab()};
  for (int i = 1; i < 20; ++i) tabs << w.newTab();
  for (ChatTab* t : tabs) {
    ChatSettings cs = t->settings();
    cs.max_tokens = 100000;  // stream for the whole measurement
    t->setSettings(cs);
    QVERIFY(t->send("go"));
  }
  QTest::qWait(500);  // first layout and paint of twenty new tabs is not the steady state
  const int64_t tokens_before = app.engine.stats().n_tokens_generated;
  QElapsedTimer clock;
  clock.start();
  qint64 last = 0, worst_gap = 0;
  int ticks = 0;
  QTimer probe;
  probe.setInterval(10);
  connect(&probe, &QTimer::timeout, [&] {
    const qint64 now = clock.elapsed();
    worst_gap = std::max(worst_gap, now - last);
    last = now;
    ++ticks;
  });
  probe.start();
  QTest::qWait(1500);
  probe.stop();
  const StatsSnapshot s = app.engine.stats();
  const double tok_per_s = (s.n_tokens_generated - tokens_before) / (clock.elapsed() / 1000.0);
  qInfo("aggregate %.0f tok/s delivered, M=%d, worst event-loop gap %lld ms over %d ticks",
        tok_per_s, s.max_batch_seen, (long long)worst_gap, ticks);
  QVERIFY(tok_per_s > 20000);
  QCOMPARE(s.max_batch_seen, 20);
  QVERIFY2(worst_gap < 150, qPrintable(QString("%1 ms").arg(worst_gap)));
  for (ChatTab* t : tabs) t->stop();
}

QTEST_MAIN(TestChatTabs)
#include "test_chat_tabs.moc"
