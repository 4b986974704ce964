// The SQLite layer under SqliteStore: a result code as a status, one call of
// a prepared statement, transactions, and the store's numbered migrations.
// Private to the store library.
#ifndef TUNEFLEET_SERVER_STORE_SQLITE_DB_H_
#define TUNEFLEET_SERVER_STORE_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace tunefleet::server::sqlite {

// `rc` as a status about `what`: Unavailable for what an operator can fix or
// a retry can outlast (locked, read-only, disk full, I/O, cannot open; the
// errno names the cause where a system call failed), Internal for the rest.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what);

// Runs constant SQL (no parameters), such as pragmas and migrations.
absl::Status Exec(sqlite3* db, const char* sql);

// One execution of a prepared statement: binds parameters in order, steps,
// and resets the statement on destruction so the next caller finds it clean.
// A binding error is kept and reported by the next Step().
class Call {
 public:
  Call(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Call() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  Call& BindText(const std::string& value) {
    return Check(sqlite3_bind_text64(stmt_, next_++, value.data(), value.size(),
                                     SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  Call& BindBlob(const std::string& value) {
    return Check(sqlite3_bind_blob64(stmt_, next_++, value.data(), value.size(),
                                     SQLITE_TRANSIENT));
  }
  Call& BindInt(int64_t value) {
    return Check(sqlite3_bind_int64(stmt_, next_++, value));
  }
  Call& BindDouble(double value) {
    return Check(sqlite3_bind_double(stmt_, next_++, value));
  }

  // True when a row is ready to be read, false when the statement is done.
  absl::StatusOr<bool> Step() {
    RETURN_IF_ERROR(status_);
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteError(db_, rc, sqlite3_sql(stmt_));
  }

  // Runs a statement that returns no rows; returns how many rows it changed.
  absl::StatusOr<int> Execute() {
    ASSIGN_OR_RETURN(bool row, Step());
    if (row) return absl::InternalError("sqlite: unexpected row");
    return sqlite3_changes(db_);
  }

  std::string ColumnBytes(int column) const {
    const void* data = sqlite3_column_blob(stmt_, column);
    int size = sqlite3_column_bytes(stmt_, column);
    if (data == nullptr) return std::string();
    return std::string(static_cast<const char*>(data), size);
  }
  int64_t ColumnInt(int column) const {
    return sqlite3_column_int64(stmt_, column);
  }
  double ColumnDouble(int column) const {
    return sqlite3_column_double(stmt_, column);
  }

 private:
  Call& Check(int rc) {
    if (rc != SQLITE_OK && status_.ok()) status_ = SqliteError(db_, rc, "bind");
    return *this;
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int next_ = 1;
  absl::Status status_;
};

// Runs `body()` (returning absl::StatusOr<T>) between BEGIN IMMEDIATE and
// COMMIT, rolling back when it or the commit fails. IMMEDIATE takes the write
// lock at once: a deferred transaction that reads first and then writes can
// fail with SQLITE_BUSY however long it waits.
template <typename T, typename Body>
absl::StatusOr<T> InTransaction(sqlite3* db, Body body) {
  RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  absl::StatusOr<T> result = body();
  if (result.ok()) {
    absl::Status committed = Exec(db, "COMMIT");
    if (!committed.ok()) result = committed;
  }
  // A failed COMMIT may leave the transaction open; a failed statement does.
  if (!result.ok() && sqlite3_get_autocommit(db) == 0) {
    Exec(db, "ROLLBACK").IgnoreError();
  }
  return result;
}

using OwnedStmt = std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)>;

// A persistent prepared statement of `sql`.
absl::StatusOr<OwnedStmt> Prepare(sqlite3* db, const char* sql);

// Applies the migrations `db` has not had, in one IMMEDIATE transaction: of
// several processes opening one fresh file, one migrates and the others wait
// (busy_timeout) and then find nothing left to do.
absl::Status Migrate(sqlite3* db);

// Migrate for connections that share a cache (those of one named in-memory
// database): they meet each other's table locks with SQLITE_LOCKED at once,
// without the busy handler, so stores opening one such database together try
// their migrations again until `busy_timeout_ms` has passed.
absl::Status MigrateSharedCache(sqlite3* db, int busy_timeout_ms);

}  // namespace tunefleet::server::sqlite

#endif  // TUNEFLEET_SERVER_STORE_SQLITE_DB_H_
