#pragma once
// Conversations in SQLite (Qt SQL), written as they happen. Streaming replies are written at
// most every ~400 ms (one transaction for all dirty messages), so a crash loses well under a
// second of text; WAL journaling keeps those small transactions cheap and lets a reader
// (another process, a test) look at the database while the app writes. The schema is
// versioned: `schema_version` holds the version and migrations run in order at open.
#include <QHash>
#include <QObject>
#include <QString>
#include <QTimer>
#include <QVector>
#include <optional>

#include "ui/conversation.h"

namespace chorus::ui {

class ChatStore : public QObject {
  Q_OBJECT
 public:
  static constexpr int kSchemaVersion = 2;
  static constexpr int kStreamFlushMs = 400;

  explicit ChatStore(QObject* parent = nullptr);
  ~ChatStore() override;

  // Opens (creating when needed) `dir`/chorus.sqlite and migrates it up to target_version
  // (tests pass an older version to build a database as an older release left it).
  bool open(const QString& dir, QString* error, int target_version = kSchemaVersion);
  bool isOpen() const { return !connection_.isEmpty(); }
  int schemaVersion() const;
  QString databasePath() const { return path_; }

  // Open conversations in tab order with their messages. Messages left Streaming by a crash
  // become Interrupted (and are written back so), keeping their text.
  QVector<Conversation> loadOpenConversations();
  std::optional<Conversation> reopenLastClosed();

  qint64 createConversation(const Conversation& c, int position);
  void setTitle(qint64 conversation_id, const QString& title);
  void setSettings(qint64 conversation_id, const ChatSettings& settings);
  void setPositions(const QVector<qint64>& ids_in_tab_order);
  void closeConversation(qint64 conversation_id);

  qint64 addMessage(qint64 conversation_id, int index, const Message& m);
  void updateMessage(const Message& m);                           // now
  void updateStreamingContent(qint64 message_id, const QString& content);  // throttled
  void deleteMessagesFrom(qint64 conversation_id, int first_index);
  void flushPending();

 Q_SIGNALS:
  // A write failed (disk full, permissions). The window shows it; the app keeps running.
  void storageError(const QString& message);

 private:
  bool exec(const QString& sql, QString* error = nullptr);
  bool migrate(int from, int to, QString* error);
  QVector<Message> loadMessages(qint64 conversation_id);
  void report(const QString& what, const QString& detail);

  QString connection_;
  QString path_;
  QHash<qint64, QString> pending_;  // message id -> latest streamed content
  QTimer flush_timer_;
  bool reported_error_ = false;
};

}  // namespace chorus::ui
