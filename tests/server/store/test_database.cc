#include "tests/server/store/test_database.h"

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <pqxx/pqxx>
#include <random>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tunefleet::server::testing {
namespace {

// A database name no other test process picks.
std::string UniqueDatabaseName() {
  static std::atomic<int> counter{0};
  std::random_device random;
  return absl::StrCat("tf_test_", getpid(), "_", counter++, "_",
                      absl::Hex(random()));
}

// `url` with its database (the URI path) replaced by `name`.
std::string WithDatabase(const std::string& url, const std::string& name) {
  size_t start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t query = url.find('?', start);
  size_t end = query == std::string::npos ? url.size() : query;
  size_t slash = url.find('/', start);
  if (slash == std::string::npos || slash > end) {
    return absl::StrCat(url.substr(0, end), "/", name, url.substr(end));
  }
  return absl::StrCat(url.substr(0, slash + 1), name, url.substr(end));
}

// Runs `sql` outside a transaction (CREATE/DROP DATABASE need that).
absl::Status RunOnServer(const std::string& url, const std::string& sql) {
  try {
    pqxx::connection connection(url);
    pqxx::nontransaction txn(connection);
    txn.exec(sql);
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(sql, ": ", e.what()));
  }
}

absl::StatusOr<int64_t> CountSqliteMigrations(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  sqlite3_stmt* stmt = nullptr;
  if (rc == SQLITE_OK) {
    rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM schema_migrations", -1,
                            &stmt, nullptr);
  }
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
  int64_t rows = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
  std::string error = sqlite3_errmsg(db);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  if (rows < 0) return absl::InternalError(error);
  return rows;
}

absl::StatusOr<int64_t> CountPostgresMigrations(const std::string& url) {
  try {
    pqxx::connection connection(url);
    pqxx::work txn(connection);
    return txn.exec1("SELECT count(*) FROM schema_migrations")[0].as<int64_t>();
  } catch (const std::exception& e) {
    return absl::InternalError(e.what());
  }
}

absl::Status ExecuteOnSqlite(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  std::string error = sqlite3_errmsg(db);
  sqlite3_close(db);
  if (rc != SQLITE_OK)
    return absl::InternalError(absl::StrCat(sql, ": ", error));
  return absl::OkStatus();
}

}  // namespace

std::string BackendName(Backend backend) {
  switch (backend) {
    case Backend::kSqlite:
      return "Sqlite";
    case Backend::kSqliteMemory:
      return "SqliteMemory";
    case Backend::kPostgres:
      return "Postgres";
  }
  return "unknown";
}

bool IsSqlite(Backend backend) { return backend != Backend::kPostgres; }

void PrintTo(Backend backend, std::ostream* os) { *os << BackendName(backend); }

std::string PostgresTestUrl() {
  const char* url = std::getenv("TUNEFLEET_TEST_POSTGRES_URL");
  return url != nullptr ? url : "";
}

bool PostgresRequired() {
  const char* required = std::getenv("TUNEFLEET_REQUIRE_POSTGRES");
  return required != nullptr && std::string(required) == "1";
}

void SkipOrFailWithoutPostgres() {
  if (!PostgresTestUrl().empty()) return;
  if (PostgresRequired()) {
    GTEST_FAIL() << "TUNEFLEET_REQUIRE_POSTGRES=1 but "
                    "TUNEFLEET_TEST_POSTGRES_URL is unset";
  }
  GTEST_SKIP() << "TUNEFLEET_TEST_POSTGRES_URL is unset; run under "
                  "scripts/with-postgres.sh to test PostgreSQL";
}

absl::StatusOr<std::unique_ptr<TestDatabase>> TestDatabase::Create(
    Backend backend) {
  auto database = absl::WrapUnique(new TestDatabase());
  database->backend_ = backend;
  if (backend == Backend::kSqlite) {
    database->dir_ = std::make_unique<tunefleet::testing::TempDir>();
    database->sqlite_path_ = database->dir_->path() + "/store.db";
    database->url_ = "sqlite://" + database->sqlite_path_;
    return database;
  }
  if (backend == Backend::kSqliteMemory) {
    database->sqlite_path_ =
        absl::StrCat("file:", UniqueDatabaseName(), "?mode=memory&cache=shared");
    database->url_ = "sqlite://" + database->sqlite_path_;
    const int rc = sqlite3_open_v2(database->sqlite_path_.c_str(), &database->keeper_,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                                   nullptr);
    if (rc != SQLITE_OK) {
      return absl::InternalError(absl::StrCat("open ", database->sqlite_path_, ": ",
                                              sqlite3_errstr(rc)));
    }
    return database;
  }
  std::string name = UniqueDatabaseName();
  absl::Status created =
      RunOnServer(PostgresTestUrl(), absl::StrCat("CREATE DATABASE ", name));
  if (!created.ok()) return created;
  database->postgres_name_ = name;
  database->url_ = WithDatabase(PostgresTestUrl(), name);
  return database;
}

TestDatabase::~TestDatabase() {
  if (keeper_ != nullptr) sqlite3_close(keeper_);
  if (postgres_name_.empty()) return;
  RunOnServer(PostgresTestUrl(), absl::StrCat("DROP DATABASE IF EXISTS ",
                                              postgres_name_, " WITH (FORCE)"))
      .IgnoreError();
}

absl::StatusOr<int64_t> TestDatabase::MigrationRows() const {
  if (IsSqlite(backend_)) return CountSqliteMigrations(sqlite_path_);
  return CountPostgresMigrations(url_);
}

absl::Status TestDatabase::Execute(const std::string& sql) const {
  if (IsSqlite(backend_)) return ExecuteOnSqlite(sqlite_path_, sql);
  return RunOnServer(url_, sql);
}

}  // namespace tunefleet::server::testing
