#include "server/store/sqlite_db.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/store/schema.h"

namespace tunefleet::server::sqlite {
namespace {

// Numbered migrations (schema::Migration): never edit one that has shipped.
// Free-form fields (reason, spec, targets, error) are BLOBs so that any byte
// sequence round-trips, as on PostgreSQL (BYTEA).
constexpr schema::Migration kSqliteMigrations[] = {
    {1, R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  state INTEGER NOT NULL,
  reason BLOB NOT NULL,
  spec BLOB NOT NULL,
  targets BLOB NOT NULL,
  created_unix_ms INTEGER NOT NULL,
  updated_unix_ms INTEGER NOT NULL);
CREATE INDEX jobs_by_created ON jobs (created_unix_ms DESC, id DESC);
CREATE TABLE trials (
  seq INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  tuning_key TEXT NOT NULL,
  config TEXT NOT NULL,
  status INTEGER NOT NULL,
  median_seconds REAL NOT NULL,
  p20_seconds REAL NOT NULL,
  p80_seconds REAL NOT NULL,
  samples INTEGER NOT NULL,
  compile_seconds REAL NOT NULL,
  worker_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  error BLOB NOT NULL,
  finished_unix_ms INTEGER NOT NULL,
  UNIQUE (job_id, tuning_key, config));
CREATE TABLE best_configs (
  tuning_key TEXT PRIMARY KEY,
  kernel_name TEXT NOT NULL,
  shape TEXT NOT NULL,
  device_model TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  config TEXT NOT NULL,
  median_seconds REAL NOT NULL,
  job_id TEXT NOT NULL,
  updated_unix_ms INTEGER NOT NULL);
CREATE INDEX best_configs_by_kernel ON best_configs (kernel_name);
)sql"},
    {2, R"sql(
CREATE TABLE blobs (
  digest TEXT PRIMARY KEY,
  content BLOB NOT NULL);
CREATE TABLE kernels (
  name TEXT PRIMARY KEY,
  spec BLOB NOT NULL,
  updated_unix_ms INTEGER NOT NULL);
)sql"},
    // Provenance and exclusion of trials, the measurement round in the
    // natural key, quarantined principals. SQLite cannot drop a UNIQUE
    // constraint: the table is rebuilt.
    {3, R"sql(
CREATE TABLE trials_v3 (
  seq INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  tuning_key TEXT NOT NULL,
  config TEXT NOT NULL,
  status INTEGER NOT NULL,
  median_seconds REAL NOT NULL,
  p20_seconds REAL NOT NULL,
  p80_seconds REAL NOT NULL,
  samples INTEGER NOT NULL,
  compile_seconds REAL NOT NULL,
  worker_id TEXT NOT NULL,
  device_id TEXT NOT NULL,
  error BLOB NOT NULL,
  finished_unix_ms INTEGER NOT NULL,
  principal TEXT NOT NULL DEFAULT '',
  clock_mhz REAL NOT NULL DEFAULT 0,
  round INTEGER NOT NULL DEFAULT 0,
  excluded INTEGER NOT NULL DEFAULT 0,
  UNIQUE (job_id, tuning_key, config, round));
INSERT INTO trials_v3 (seq, job_id, tuning_key, config, status, median_seconds,
  p20_seconds, p80_seconds, samples, compile_seconds, worker_id, device_id,
  error, finished_unix_ms)
SELECT seq, job_id, tuning_key, config, status, median_seconds, p20_seconds,
  p80_seconds, samples, compile_seconds, worker_id, device_id, error,
  finished_unix_ms FROM trials;
DROP TABLE trials;
ALTER TABLE trials_v3 RENAME TO trials;
CREATE INDEX trials_by_key ON trials (tuning_key);
CREATE TABLE quarantine (
  principal TEXT PRIMARY KEY,
  reason BLOB NOT NULL,
  since_unix_ms INTEGER NOT NULL);
)sql"},
    // Bearer tokens of clients, kept only hashed.
    {4, R"sql(
CREATE TABLE tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  role TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  created_unix_ms INTEGER NOT NULL,
  revoked_unix_ms INTEGER NOT NULL);
)sql"},
    // A trial whose sampling stopped early under the early-cut rule
    // (docs/measurement.md): its measurement is partial, it is never best.
    {5, R"sql(
ALTER TABLE trials ADD COLUMN cut_early INTEGER NOT NULL DEFAULT 0;
)sql"},
    // Listing jobs by owner, kernel and state; imported best rows.
    {6, R"sql(
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_kernel ON jobs (kernel_name, created_unix_ms DESC, id DESC);
CREATE INDEX trials_by_job ON trials (job_id, seq);
ALTER TABLE best_configs ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;
ALTER TABLE best_configs ADD COLUMN origin TEXT NOT NULL DEFAULT '';
)sql"},
    // Repeatability: finalist rounds and their CV, low-clock samples.
    {7, R"sql(
ALTER TABLE trials ADD COLUMN rounds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN rounds_cv REAL NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN retaken_samples INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN low_clock_samples INTEGER NOT NULL DEFAULT 0;
)sql"},
    // Nsight Compute profiles of a job's fastest configs.
    {8, R"sql(
CREATE TABLE profiles (
  job_id TEXT NOT NULL,
  tuning_key TEXT NOT NULL,
  config TEXT NOT NULL,
  profile BLOB NOT NULL,
  profiled_unix_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, tuning_key, config));
)sql"},
    // Profile requests not yet profiled, so that a restart keeps them.
    {9, R"sql(
CREATE TABLE profile_requests (
  job_id TEXT NOT NULL,
  tuning_key TEXT NOT NULL,
  device_model TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  config TEXT NOT NULL,
  rank INTEGER NOT NULL,
  median_seconds REAL NOT NULL,
  requested_unix_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, tuning_key, config));
)sql"},
    // Jobs submitted with replace_best: they set the floor a key's best is
    // derived from (best_derivation.h).
    {10, R"sql(
ALTER TABLE jobs ADD COLUMN replace_best INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_replacing ON jobs (id) WHERE replace_best = 1;
)sql"},
    // Sweeps: the jobs of one submission over many shapes.
    {11, R"sql(
ALTER TABLE jobs ADD COLUMN sweep_id TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_sweep ON jobs (sweep_id, created_unix_ms DESC, id DESC);
)sql"},
    // How sure a best is: its tie set and the measurements behind it.
    {12, R"sql(
ALTER TABLE best_configs ADD COLUMN evidence BLOB NOT NULL DEFAULT x'';
)sql"},
    // Calibration: the reference's time on the device near each measurement.
    {13, R"sql(
ALTER TABLE trials ADD COLUMN calibration_seconds REAL NOT NULL DEFAULT 0;
)sql"},
    // The coordinator that leads the database, and its fencing epoch
    // (leadership.h). SQLite files are led through a file lock; the row
    // keeps the two schemas alike.
    {14, R"sql(
CREATE TABLE coordinator_leader (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  epoch INTEGER NOT NULL,
  holder TEXT NOT NULL,
  since_unix_ms INTEGER NOT NULL);
INSERT INTO coordinator_leader VALUES (1, 0, '', 0);
)sql"},
    // Secrets the coordinators of one database share (Store::Secret).
    {15, R"sql(
CREATE TABLE coordinator_secrets (
  name TEXT PRIMARY KEY,
  secret BLOB NOT NULL,
  created_unix_ms INTEGER NOT NULL);
)sql"},
};

// The result codes an operator can fix or a retry can outlast, named for
// the message; "" for the rest (Internal).
absl::string_view UnavailableCondition(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "locked by another connection";
    case SQLITE_READONLY:
      return "read-only";
    case SQLITE_FULL:
      return "disk full";
    case SQLITE_IOERR:
      return "I/O error";
    case SQLITE_CANTOPEN:
      return "cannot open the file";
    default:
      return "";
  }
}

// For the codes that come from a system call, the errno names the cause
// (EROFS, ENOSPC, EPERM...); for others it is stale.
bool HasSystemCause(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_READONLY || primary == SQLITE_FULL ||
         primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN;
}

absl::StatusOr<int64_t> AppliedVersion(sqlite3* db) {
  ASSIGN_OR_RETURN(OwnedStmt stmt, Prepare(db,
                                           "SELECT coalesce(max(version), 0) "
                                           "FROM schema_migrations"));
  Call call(db, stmt.get());
  ASSIGN_OR_RETURN(bool row, call.Step());
  if (!row) return absl::InternalError("sqlite: no schema version");
  return call.ColumnInt(0);
}

absl::Status RecordVersion(sqlite3* db, int version) {
  ASSIGN_OR_RETURN(OwnedStmt stmt,
                   Prepare(db,
                           "INSERT INTO schema_migrations "
                           "(version, applied_unix_ms) VALUES (?1, ?2)"));
  Call call(db, stmt.get());
  call.BindInt(version).BindInt(schema::NowUnixMs());
  return call.Execute().status();
}

absl::Status ApplyPendingMigrations(sqlite3* db) {
  RETURN_IF_ERROR(Exec(db,
                       "CREATE TABLE IF NOT EXISTS schema_migrations ("
                       "version INTEGER PRIMARY KEY, "
                       "applied_unix_ms INTEGER NOT NULL)"));
  ASSIGN_OR_RETURN(int64_t applied, AppliedVersion(db));
  for (const schema::Migration& migration : kSqliteMigrations) {
    if (migration.version <= applied) continue;
    RETURN_IF_ERROR(Exec(db, migration.sql));
    RETURN_IF_ERROR(RecordVersion(db, migration.version));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  std::string detail = sqlite3_errstr(rc);
  if (db != nullptr && sqlite3_errcode(db) == rc) {
    absl::StrAppend(&detail, " (", sqlite3_errmsg(db), ")");
  }
  int system_errno = db != nullptr ? sqlite3_system_errno(db) : 0;
  if (HasSystemCause(rc) && system_errno != 0) {
    absl::StrAppend(&detail, ": ", std::strerror(system_errno));
  }
  absl::string_view condition = UnavailableCondition(rc);
  if (condition.empty()) {
    return absl::InternalError(absl::StrCat("sqlite: ", what, ": ", detail));
  }
  return absl::UnavailableError(
      absl::StrCat("sqlite: ", condition, ": ", what, ": ", detail));
}

absl::Status Exec(sqlite3* db, const char* sql) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    return SqliteError(db, rc, absl::string_view(sql).substr(0, 60));
  }
  return absl::OkStatus();
}

absl::StatusOr<OwnedStmt> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt,
                              nullptr);
  OwnedStmt owned(stmt, sqlite3_finalize);
  if (rc != SQLITE_OK) return SqliteError(db, rc, sql);
  return owned;
}

absl::Status Migrate(sqlite3* db) {
  return InTransaction<bool>(db,
                             [db]() -> absl::StatusOr<bool> {
                               RETURN_IF_ERROR(ApplyPendingMigrations(db));
                               return true;
                             })
      .status();
}

absl::Status MigrateSharedCache(sqlite3* db, int busy_timeout_ms) {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(busy_timeout_ms);
  for (;;) {
    absl::Status migrated = Migrate(db);
    const bool locked = absl::IsUnavailable(migrated) &&
                        absl::StrContains(migrated.message(), UnavailableCondition(SQLITE_LOCKED));
    if (!locked || absl::Now() >= deadline) return migrated;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

}  // namespace tunefleet::server::sqlite
