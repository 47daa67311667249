// The chat store and settings: round trips through SQLite, schema migration, recovery of a
// reply that was streaming when the app died (a real child process, SIGKILLed), exports,
// and settings files that are malformed.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTabBar>
#include <QTabWidget>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QtTest>

#include "ui/app_settings.h"
#include "ui/chat_export.h"
#include "ui/demo_runner.h"
#include "ui_test_support.h"

using namespace chorus;
using namespace chorus::ui;
using namespace chorus::ui::test;

class TestPersistence : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void roundTripRestoresTabsMessagesSettings();
  void migratesOlderSchema();
  void refusesNewerSchema();
  void streamingIsWrittenWhileItHappens();
  void crashWhileStreamingLosesAtMostASecond();
  void exportsMarkdownAndJson();
  void malformedSettingsFallBackToDefaults();
};

void TestPersistence::roundTripRestoresTabsMessagesSettings() {
  QTemporaryDir dir;
  ChatSettings custom;
  custom.system_prompt = "Be brief.";
  custom.temperature = 0.3;
  custom.seed = 99;
  {
    AppFixture app({.step_interval_us = 200}, dir.path());
    MainWindow& w = app.makeWindow();
    QVERIFY(app.loadModel());
    ChatTab* a = w.currentTab();
    a->setSettings(custom);
    QVERIFY(a->send("what is two plus two?"));
    QVERIFY(app.waitIdle(a));
    ChatTab* b = w.newTab();
    w.renameTab(1, "Second chat");
    QVERIFY(b->send("unicode: ünïcødé ✓ 中文"));
    QVERIFY(app.waitIdle(b));
    w.tabWidget()->tabBar()->moveTab(1, 0);
  }
  AppFixture app({}, dir.path());
  MainWindow& w = app.makeWindow();
  QCOMPARE(w.tabCount(), 2);
  QCOMPARE(w.tab(0)->title(), QString("Second chat"));
  QCOMPARE(w.tab(1)->title(), QString("what is two plus two?"));
  QCOMPARE(w.tab(1)->settings(), custom);
  const auto& msgs = w.tab(0)->conversation().messages;
  QCOMPARE(msgs.size(), 2);
  QCOMPARE(msgs[0].content, QString("unicode: ünïcødé ✓ 中文"));
  QCOMPARE(msgs[1].content, fakeReplyPrefix("unicode: ünïcødé ✓ 中文", 512));
  QCOMPARE(msgs[1].state, MessageState::Complete);
  QVERIFY(msgs[1].note.contains("tokens"));
}

void TestPersistence::migratesOlderSchema() {
  QTemporaryDir dir;
  {
    ChatStore v1;
    QString error;
    QVERIFY(v1.open(dir.path(), &error, 1));
    QCOMPARE(v1.schemaVersion(), 1);
    Conversation c;
    c.title = "from version 1";
    // A v1 database has no closed_at column; insert through SQL as v1 would have.
    QSqlQuery q(QSqlDatabase::database(QSqlDatabase::connectionNames().first()));
    QVERIFY(q.exec("INSERT INTO conversations (title, position, settings, created_at)"
                   " VALUES ('from version 1', 0, '{\"temperature\": \"hot\"}', 0)"));
  }
  ChatStore store;
  QString error;
  QVERIFY2(store.open(dir.path(), &error), qPrintable(error));
  QCOMPARE(store.schemaVersion(), ChatStore::kSchemaVersion);
  const auto convs = store.loadOpenConversations();
  QCOMPARE(convs.size(), 1);
  QCOMPARE(convs[0].title, QString("from version 1"));
  QCOMPARE(convs[0].settings, ChatSettings{});  // malformed JSON field -> default
}

void TestPersistence::refusesNewerSchema() {
  QTemporaryDir dir;
  {
    ChatStore s;
    QString error;
    QVERIFY(s.open(dir.path(), &error));
    QSqlQuery q(QSqlDatabase::database(QSqlDatabase::connectionNames().first()));
    QVERIFY(q.exec("UPDATE schema_version SET version = 99"));
  }
  ChatStore s;
  QString error;
  QVERIFY(!s.open(dir.path(), &error));
  QVERIFY2(error.contains("newer"), qPrintable(error));
}

void TestPersistence::streamingIsWrittenWhileItHappens() {
  AppFixture app({.step_interval_us = 10000});
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  ChatTab* t = w.currentTab();
  QVERIFY(t->send("stream to disk"));
  QTest::qWait(1200);
  // A second connection sees the partial reply without the app flushing explicitly.
  QSqlDatabase reader = QSqlDatabase::addDatabase("QSQLITE", "reader");
  reader.setDatabaseName(app.store.databasePath());
  QVERIFY(reader.open());
  QString on_disk;
  {
    QSqlQuery q(reader);
    QVERIFY(q.exec("SELECT content FROM messages WHERE role = 'assistant'"));
    QVERIFY(q.next());
    on_disk = q.value(0).toString();
  }
  reader.close();
  reader = QSqlDatabase();
  QSqlDatabase::removeDatabase("reader");
  const QString in_memory = t->conversation().messages.last().content;
  QVERIFY(!on_disk.isEmpty());
  QVERIFY(in_memory.startsWith(on_disk));
  t->stop();
  QVERIFY(app.waitIdle(t));
}

void TestPersistence::crashWhileStreamingLosesAtMostASecond() {
  const QString bin = qEnvironmentVariable("CHORUS_GUI_BIN");
  if (bin.isEmpty()) QSKIP("CHORUS_GUI_BIN is not set (run through ctest)");
  QTemporaryDir dir;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("CHORUS_DATA_DIR", dir.path());
  env.insert("CHORUS_FAKE_TRACE", "1");
  env.insert("QT_QPA_PLATFORM", "offscreen");
  const int rate = 50;  // tokens per second
  QProcess child;
  child.setProcessEnvironment(env);
  child.start(bin, {"--fake-engine", "--fake-rate", QString::number(rate), "--demo", "1",
                    "--quit-after-ms", "60000"});
  QVERIFY(child.waitForStarted(10000));
  int n_seen = 0;  // tokens the child reported generating
  QByteArray buffer;
  QVERIFY(waitFor([&] {
    buffer += child.readAllStandardOutput();
    int nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const QList<QByteArray> parts = buffer.left(nl).split(' ');
      if (parts.size() == 3 && parts[0] == "fake-token") n_seen = parts[2].toInt();
      buffer.remove(0, nl + 1);
    }
    return n_seen >= 80;  // ~1.6 s into the reply
  }, 30000));
  child.kill();  // SIGKILL: no flush, no destructors
  QVERIFY(child.waitForFinished(5000));
  QCOMPARE(child.exitStatus(), QProcess::CrashExit);

  // Restart the app on the same data: it must come up and mark the reply interrupted.
  QProcess again;
  again.setProcessEnvironment(env);
  again.start(bin, {"--fake-engine", "--quit-after-ms", "1500"});
  QVERIFY(again.waitForFinished(20000));
  QCOMPARE(again.exitCode(), 0);

  ChatStore store;
  QString error;
  QVERIFY(store.open(dir.path(), &error));
  const auto convs = store.loadOpenConversations();
  QCOMPARE(convs.size(), 1);
  QCOMPARE(convs[0].messages.size(), 2);
  const Message& reply = convs[0].messages[1];
  QCOMPARE(reply.state, MessageState::Interrupted);
  const QString prompt = DemoRunner::samplePrompt(0);
  int n_restored = -1;
  for (int k = 0; k <= n_seen + rate; ++k)
    if (fakeReplyPrefix(prompt, k) == reply.content) n_restored = k;
  qInfo("generated >= %d tokens before SIGKILL, %d restored", n_seen, n_restored);
  QVERIFY2(n_restored >= 0, "restored text is not a prefix of the reply");
  QVERIFY(n_restored >= n_seen - rate);  // at most one second lost
}

void TestPersistence::exportsMarkdownAndJson() {
  AppFixture app({.step_interval_us = 200});
  MainWindow& w = app.makeWindow();
  QVERIFY(app.loadModel());
  ChatTab* t = w.currentTab();
  QVERIFY(t->send("export me"));
  QVERIFY(app.waitIdle(t));
  const QString md_path = app.temp.filePath("chat.md"), json_path = app.temp.filePath("chat.json");
  QVERIFY(w.exportChat(0, md_path, ExportFormat::Markdown));
  QVERIFY(w.exportChat(0, json_path, ExportFormat::Json));
  QFile md(md_path);
  QVERIFY(md.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(md.readAll());
  QVERIFY(text.startsWith("# export me"));
  QVERIFY(text.contains("## You\n\nexport me"));
  QVERIFY(text.contains("```cpp\nint answer()"));
  QFile js(json_path);
  QVERIFY(js.open(QIODevice::ReadOnly));
  const QJsonObject root = QJsonDocument::fromJson(js.readAll()).object();
  QCOMPARE(root["format"].toString(), QString("chorus-chat"));
  QCOMPARE(root["messages"].toArray().size(), 2);
  QCOMPARE(root["messages"].toArray()[1].toObject()["content"].toString(),
           t->conversation().messages[1].content);
  QVERIFY(!w.exportChat(0, "/nonexistent-dir/x.md", ExportFormat::Markdown));
  QCOMPARE(app.prompts.errors.size(), 1);
}

void TestPersistence::malformedSettingsFallBackToDefaults() {
  QTemporaryDir dir;
  const QString path = dir.filePath("settings.ini");
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("[engine]\nbackend=quantum\ncpu_threads=-4\ncontext_tokens=lots\n"
          "[ui]\ntheme=purple\nfont_point_size=9999\n[models]\nrecent=\n\x01garbage=\xff\n");
  f.close();
  QSettings s(path, QSettings::IniFormat);
  const AppSettings a = AppSettings::load(s);
  QCOMPARE(a, AppSettings{});
  QSettings s2(dir.filePath("ok.ini"), QSettings::IniFormat);
  AppSettings b;
  b.backend = "cpu";
  b.cpu_threads = 3;
  b.theme = Theme::Dark;
  b.addRecentModel("/m/a.gguf");
  b.addRecentModel("/m/b.gguf");
  b.addRecentModel("/m/a.gguf");
  b.save(s2);
  const AppSettings c = AppSettings::load(s2);
  QCOMPARE(c, b);
  QCOMPARE(c.recent_models, QStringList({"/m/a.gguf", "/m/b.gguf"}));
  // A window built on the malformed file starts normally.
  AppFixture app({}, dir.path());
  MainWindow& w = app.makeWindow();
  QCOMPARE(w.appSettings().backend, QString("auto"));
}

QTEST_MAIN(TestPersistence)
#include "test_persistence.moc"
