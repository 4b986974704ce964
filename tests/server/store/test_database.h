// Fresh databases for the Store contract tests: a SQLite file in a temporary
// directory, or a newly created database on the PostgreSQL server named by
// TUNEFLEET_TEST_POSTGRES_URL (scripts/with-postgres.sh starts one).
#ifndef TUNEFLEET_TESTS_SERVER_STORE_TEST_DATABASE_H_
#define TUNEFLEET_TESTS_SERVER_STORE_TEST_DATABASE_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/support/test_support.h"

struct sqlite3;

namespace tunefleet::server::testing {

// kSqliteMemory: an in-memory SQLite database (a shared-cache URI name that
// the TestDatabase keeps alive, so the store can be closed and opened again).
enum class Backend { kSqlite, kSqliteMemory, kPostgres };

// "Sqlite", "SqliteMemory" or "Postgres" (used in test names).
std::string BackendName(Backend backend);
// True for both SQLite backends (one SQL dialect).
bool IsSqlite(Backend backend);
void PrintTo(Backend backend, std::ostream* os);

// The PostgreSQL server URL for tests (a postgresql:// URL whose user may
// create databases), or "" when TUNEFLEET_TEST_POSTGRES_URL is unset.
std::string PostgresTestUrl();
// True when TUNEFLEET_REQUIRE_POSTGRES=1: PostgreSQL tests must not skip.
bool PostgresRequired();
// When PostgresTestUrl() is empty, marks the running test skipped, or failed
// when PostgresRequired(). Callers then return when IsSkipped() or
// HasFatalFailure().
void SkipOrFailWithoutPostgres();

// One empty database, deleted by the destructor. Not thread-safe.
class TestDatabase {
 public:
  // REQUIRES: for kPostgres, PostgresTestUrl() is not empty.
  static absl::StatusOr<std::unique_ptr<TestDatabase>> Create(Backend backend);
  ~TestDatabase();

  // The URL to give OpenStore.
  const std::string& url() const { return url_; }
  // How many rows schema_migrations holds, read directly from the database.
  absl::StatusOr<int64_t> MigrationRows() const;
  // Runs `sql` (statements that return no rows) on a connection of its own.
  absl::Status Execute(const std::string& sql) const;

 private:
  TestDatabase() = default;

  Backend backend_ = Backend::kSqlite;
  std::unique_ptr<tunefleet::testing::TempDir> dir_;  // SQLite only
  std::string sqlite_path_;  // a file, or a memory URI name
  sqlite3* keeper_ = nullptr;  // in memory: holds the database while it lives
  std::string postgres_name_;  // the database created for this test
  std::string url_;
};

}  // namespace tunefleet::server::testing

#endif  // TUNEFLEET_TESTS_SERVER_STORE_TEST_DATABASE_H_
