#include "ui/chat_store.h"

#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

namespace chorus::ui {
namespace {

// Migration i takes the schema from version i to i + 1. Never edit a released step: add one.
const char* const kMigrations[][4] = {
    {// 0 -> 1: conversations and their messages.
     "CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL,"
     " position INTEGER NOT NULL, settings TEXT NOT NULL, created_at INTEGER NOT NULL)",
     "CREATE TABLE messages (id INTEGER PRIMARY KEY,"
     " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
     " seq INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,"
     " state INTEGER NOT NULL, note TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL)",
     nullptr, nullptr},
    {// 1 -> 2: closing a tab archives its chat (Reopen closed chat); ordered message reads.
     "ALTER TABLE conversations ADD COLUMN closed_at INTEGER",
     "CREATE INDEX messages_by_conversation ON messages(conversation_id, seq)", nullptr,
     nullptr},
};
static_assert(std::size(kMigrations) == ChatStore::kSchemaVersion);

qint64 nowSecs() { return QDateTime::currentSecsSinceEpoch(); }

// Qt SQL binds a null QString as SQL NULL, which the NOT NULL text columns reject; an
// empty reply that has not streamed anything yet is "" rather than NULL.
QString text(const QString& s) { return s.isNull() ? QString("") : s; }

}  // namespace

ChatStore::ChatStore(QObject* parent) : QObject(parent) {
  flush_timer_.setSingleShot(true);
  flush_timer_.setInterval(kStreamFlushMs);
  connect(&flush_timer_, &QTimer::timeout, this, &ChatStore::flushPending);
}

ChatStore::~ChatStore() {
  if (!isOpen()) return;
  flushPending();
  { QSqlDatabase::database(connection_).close(); }
  QSqlDatabase::removeDatabase(connection_);
}

bool ChatStore::open(const QString& dir, QString* error, int target_version) {
  if (!QDir().mkpath(dir)) {
    *error = tr("Cannot create the data folder %1").arg(dir);
    return false;
  }
  path_ = QDir(dir).filePath("chorus.sqlite");
  const QString name = QString("chorus-store-%1").arg(quintptr(this));
  {
    QSqlDatabase db = QSqlDatabase::addDatabase("QSQLITE", name);
    db.setDatabaseName(path_);
    if (!db.open()) {
      *error = tr("Cannot open %1: %2").arg(path_, db.lastError().text());
      db = QSqlDatabase();
      QSqlDatabase::removeDatabase(name);
      return false;
    }
  }
  connection_ = name;
  // WAL + synchronous=NORMAL: a committed transaction survives a process crash (SIGKILL);
  // only an OS crash may lose the last commits, which is acceptable for chat history.
  if (!exec("PRAGMA journal_mode=WAL", error) || !exec("PRAGMA synchronous=NORMAL", error) ||
      !exec("PRAGMA foreign_keys=ON", error) ||
      !exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)", error))
    return false;
  const int have = schemaVersion();
  if (have > kSchemaVersion) {
    *error = tr("%1 was written by a newer Chorus (schema %2; this build knows %3).")
                 .arg(path_).arg(have).arg(kSchemaVersion);
    return false;
  }
  return migrate(have, target_version, error);
}

int ChatStore::schemaVersion() const {
  QSqlQuery q(QSqlDatabase::database(connection_));
  if (!q.exec("SELECT version FROM schema_version") || !q.next()) return 0;
  return q.value(0).toInt();
}

bool ChatStore::migrate(int from, int to, QString* error) {
  QSqlDatabase db = QSqlDatabase::database(connection_);
  for (int v = from; v < to; ++v) {
    db.transaction();
    for (const char* sql : kMigrations[v]) {
      if (sql && !exec(sql, error)) {
        db.rollback();
        *error = tr("Upgrading the chat database to version %1 failed: %2").arg(v + 1).arg(*error);
        return false;
      }
    }
    const bool ok = exec("DELETE FROM schema_version", error) &&
                    exec(QString("INSERT INTO schema_version VALUES (%1)").arg(v + 1), error);
    if (!ok || !db.commit()) {
      db.rollback();
      return false;
    }
  }
  return true;
}

bool ChatStore::exec(const QString& sql, QString* error) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  if (q.exec(sql)) return true;
  if (error) *error = q.lastError().text();
  return false;
}

void ChatStore::report(const QString& what, const QString& detail) {
  if (reported_error_) return;  // one dialog, not one per streamed chunk
  reported_error_ = true;
  Q_EMIT storageError(tr("Saving chats failed (%1): %2").arg(what, detail));
}

QVector<Conversation> ChatStore::loadOpenConversations() {
  QVector<Conversation> out;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.exec("SELECT id, title, settings FROM conversations WHERE closed_at IS NULL"
         " ORDER BY position, id");
  while (q.next()) {
    Conversation c;
    c.id = q.value(0).toLongLong();
    c.title = q.value(1).toString();
    c.settings = ChatSettings::fromJson(QJsonDocument::fromJson(q.value(2).toByteArray()).object());
    out.push_back(c);
  }
  for (Conversation& c : out) c.messages = loadMessages(c.id);
  return out;
}

QVector<Message> ChatStore::loadMessages(qint64 conversation_id) {
  QVector<Message> out;
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("SELECT id, role, content, state, note FROM messages WHERE conversation_id = ?"
            " ORDER BY seq, id");
  q.addBindValue(conversation_id);
  q.exec();
  while (q.next()) {
    Message m;
    m.id = q.value(0).toLongLong();
    m.role = roleFromName(q.value(1).toString());
    m.content = q.value(2).toString();
    m.state = stateFromCode(q.value(3).toInt());
    m.note = q.value(4).toString();
    if (m.state == MessageState::Streaming) {
      m.state = MessageState::Interrupted;
      m.note = tr("interrupted: the app closed while this reply was streaming");
      updateMessage(m);
    }
    out.push_back(m);
  }
  return out;
}

std::optional<Conversation> ChatStore::reopenLastClosed() {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.exec("SELECT id FROM conversations WHERE closed_at IS NOT NULL ORDER BY closed_at DESC, id DESC"
         " LIMIT 1");
  if (!q.next()) return std::nullopt;
  const qint64 id = q.value(0).toLongLong();
  QSqlQuery u(QSqlDatabase::database(connection_));
  u.prepare("UPDATE conversations SET closed_at = NULL, position = 1000000 WHERE id = ?");
  u.addBindValue(id);
  if (!u.exec()) report(tr("reopen"), u.lastError().text());
  for (const Conversation& c : loadOpenConversations())
    if (c.id == id) return c;
  return std::nullopt;
}

qint64 ChatStore::createConversation(const Conversation& c, int position) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("INSERT INTO conversations (title, position, settings, created_at) VALUES (?,?,?,?)");
  q.addBindValue(text(c.title));
  q.addBindValue(position);
  q.addBindValue(QJsonDocument(c.settings.toJson()).toJson(QJsonDocument::Compact));
  q.addBindValue(nowSecs());
  if (!q.exec()) {
    report(tr("new chat"), q.lastError().text());
    return 0;
  }
  return q.lastInsertId().toLongLong();
}

void ChatStore::setTitle(qint64 conversation_id, const QString& title) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("UPDATE conversations SET title = ? WHERE id = ?");
  q.addBindValue(text(title));
  q.addBindValue(conversation_id);
  if (!q.exec()) report(tr("rename"), q.lastError().text());
}

void ChatStore::setSettings(qint64 conversation_id, const ChatSettings& settings) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("UPDATE conversations SET settings = ? WHERE id = ?");
  q.addBindValue(QJsonDocument(settings.toJson()).toJson(QJsonDocument::Compact));
  q.addBindValue(conversation_id);
  if (!q.exec()) report(tr("chat settings"), q.lastError().text());
}

void ChatStore::setPositions(const QVector<qint64>& ids) {
  QSqlDatabase db = QSqlDatabase::database(connection_);
  db.transaction();
  QSqlQuery q(db);
  q.prepare("UPDATE conversations SET position = ? WHERE id = ?");
  for (int i = 0; i < ids.size(); ++i) {
    q.addBindValue(i);
    q.addBindValue(ids[i]);
    if (!q.exec()) report(tr("tab order"), q.lastError().text());
  }
  db.commit();
}

void ChatStore::closeConversation(qint64 conversation_id) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("UPDATE conversations SET closed_at = ? WHERE id = ?");
  q.addBindValue(QDateTime::currentMSecsSinceEpoch());
  q.addBindValue(conversation_id);
  if (!q.exec()) report(tr("close chat"), q.lastError().text());
}

qint64 ChatStore::addMessage(qint64 conversation_id, int index, const Message& m) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("INSERT INTO messages (conversation_id, seq, role, content, state, note, created_at)"
            " VALUES (?,?,?,?,?,?,?)");
  q.addBindValue(conversation_id);
  q.addBindValue(index);
  q.addBindValue(roleName(m.role));
  q.addBindValue(text(m.content));
  q.addBindValue(stateCode(m.state));
  q.addBindValue(text(m.note));
  q.addBindValue(nowSecs());
  if (!q.exec()) {
    report(tr("message"), q.lastError().text());
    return 0;
  }
  return q.lastInsertId().toLongLong();
}

void ChatStore::updateMessage(const Message& m) {
  pending_.remove(m.id);
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("UPDATE messages SET content = ?, state = ?, note = ? WHERE id = ?");
  q.addBindValue(text(m.content));
  q.addBindValue(stateCode(m.state));
  q.addBindValue(text(m.note));
  q.addBindValue(m.id);
  if (!q.exec()) report(tr("message"), q.lastError().text());
}

void ChatStore::updateStreamingContent(qint64 message_id, const QString& content) {
  pending_.insert(message_id, content);
  if (!flush_timer_.isActive()) flush_timer_.start();
}

void ChatStore::flushPending() {
  if (pending_.isEmpty() || !isOpen()) return;
  QElapsedTimer cost;
  cost.start();
  QSqlDatabase db = QSqlDatabase::database(connection_);
  db.transaction();
  QSqlQuery q(db);
  q.prepare("UPDATE messages SET content = ? WHERE id = ?");
  for (auto it = pending_.cbegin(); it != pending_.cend(); ++it) {
    q.addBindValue(text(it.value()));
    q.addBindValue(it.key());
    if (!q.exec()) report(tr("streamed reply"), q.lastError().text());
  }
  db.commit();
  if (cost.elapsed() > 50)  // a slow disk stalls the GUI thread: say so in the log
    qWarning("chorus: writing %d streamed replies took %lld ms", int(pending_.size()), cost.elapsed());
  pending_.clear();
}

void ChatStore::deleteMessagesFrom(qint64 conversation_id, int first_index) {
  QSqlQuery q(QSqlDatabase::database(connection_));
  q.prepare("DELETE FROM messages WHERE conversation_id = ? AND seq >= ?");
  q.addBindValue(conversation_id);
  q.addBindValue(first_index);
  if (!q.exec()) report(tr("delete messages"), q.lastError().text());
}

}  // namespace chorus::ui
