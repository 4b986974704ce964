#include "server/store/sqlite_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunefleet::server {
namespace {

// Numbered migrations, applied in order, each exactly once per database.
// Never edit one that has shipped: append a new one.
struct Migration {
  int version;
  const char* sql;
};

// Free-form fields (reason, spec, targets, error) are BLOBs so that any byte
// sequence round-trips, as on PostgreSQL (BYTEA).
constexpr Migration kMigrations[] = {
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
};

#define TF_JOB_COLUMNS                                               \
  "id, kernel_name, state, reason, spec, targets, created_unix_ms, " \
  "updated_unix_ms"
#define TF_TRIAL_COLUMNS                                                 \
  "job_id, tuning_key, config, status, median_seconds, p20_seconds, "    \
  "p80_seconds, samples, compile_seconds, worker_id, device_id, error, " \
  "finished_unix_ms"
#define TF_BEST_COLUMNS                                             \
  "tuning_key, kernel_name, shape, device_model, toolkit, config, " \
  "median_seconds, job_id, updated_unix_ms"

// Indexed by SqliteStore::Query.
constexpr const char* kQuerySql[] = {
    // kPutJob
    "INSERT INTO jobs (" TF_JOB_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
    "ON CONFLICT (id) DO UPDATE SET kernel_name = excluded.kernel_name, "
    "state = excluded.state, reason = excluded.reason, spec = excluded.spec, "
    "targets = excluded.targets, created_unix_ms = excluded.created_unix_ms, "
    "updated_unix_ms = excluded.updated_unix_ms",
    // kGetJob
    "SELECT " TF_JOB_COLUMNS " FROM jobs WHERE id = ?1",
    // kListJobs
    "SELECT " TF_JOB_COLUMNS
    " FROM jobs WHERE (?1 = 0 OR state IN (1, 2)) "
    "ORDER BY created_unix_ms DESC, id DESC LIMIT ?2",
    // kInsertTrial
    "INSERT INTO trials (" TF_TRIAL_COLUMNS
    ") VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) "
    "ON CONFLICT (job_id, tuning_key, config) DO NOTHING",
    // kListTrials
    "SELECT " TF_TRIAL_COLUMNS " FROM trials WHERE job_id = ?1 ORDER BY seq",
    // kUpsertBest
    "INSERT INTO best_configs (" TF_BEST_COLUMNS
    ") VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
    "ON CONFLICT (tuning_key) DO UPDATE SET kernel_name = "
    "excluded.kernel_name, "
    "shape = excluded.shape, device_model = excluded.device_model, "
    "toolkit = excluded.toolkit, config = excluded.config, "
    "median_seconds = excluded.median_seconds, job_id = excluded.job_id, "
    "updated_unix_ms = excluded.updated_unix_ms "
    "WHERE excluded.median_seconds < best_configs.median_seconds",
    // kGetBest
    "SELECT " TF_BEST_COLUMNS " FROM best_configs WHERE tuning_key = ?1",
    // kListBest
    "SELECT " TF_BEST_COLUMNS
    " FROM best_configs WHERE (?1 = '' OR kernel_name = ?1) "
    "AND (?2 = '' OR device_model = ?2) AND (?3 = '' OR toolkit = ?3) "
    "ORDER BY tuning_key",
    // kPutBlob
    "INSERT INTO blobs (digest, content) VALUES (?1, ?2) "
    "ON CONFLICT (digest) DO NOTHING",
    // kGetBlob
    "SELECT content FROM blobs WHERE digest = ?1",
    // kPutKernel
    "INSERT INTO kernels (name, spec, updated_unix_ms) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, "
    "updated_unix_ms = excluded.updated_unix_ms",
    // kListKernels
    "SELECT name, spec, updated_unix_ms FROM kernels ORDER BY name",
};

#undef TF_JOB_COLUMNS
#undef TF_TRIAL_COLUMNS
#undef TF_BEST_COLUMNS

// Busy and locked mean another connection holds the database, cantopen a
// file that is not there to open, readonly a file or directory that does not
// take writes now, full a full disk, ioerr a failing disk: all of them may
// clear, so the caller should retry later.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  std::string message =
      absl::StrCat("sqlite: ", what, ": ", sqlite3_errstr(rc));
  if (db != nullptr && sqlite3_errcode(db) == rc) {
    absl::StrAppend(&message, " (", sqlite3_errmsg(db), ")");
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_IOERR:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

// Runs constant SQL (no parameters), such as pragmas and migrations.
absl::Status Exec(sqlite3* db, const char* sql) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    return SqliteError(db, rc, absl::string_view(sql).substr(0, 60));
  }
  return absl::OkStatus();
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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

JobRecord ReadJob(const Call& call) {
  JobRecord job;
  job.id = call.ColumnBytes(0);
  job.kernel_name = call.ColumnBytes(1);
  job.state = static_cast<int>(call.ColumnInt(2));
  job.reason = call.ColumnBytes(3);
  job.spec = call.ColumnBytes(4);
  job.targets = call.ColumnBytes(5);
  job.created_unix_ms = call.ColumnInt(6);
  job.updated_unix_ms = call.ColumnInt(7);
  return job;
}

TrialRecord ReadTrial(const Call& call) {
  TrialRecord trial;
  trial.job_id = call.ColumnBytes(0);
  trial.tuning_key = call.ColumnBytes(1);
  trial.config = call.ColumnBytes(2);
  trial.status = static_cast<int>(call.ColumnInt(3));
  trial.median_seconds = call.ColumnDouble(4);
  trial.p20_seconds = call.ColumnDouble(5);
  trial.p80_seconds = call.ColumnDouble(6);
  trial.samples = call.ColumnInt(7);
  trial.compile_seconds = call.ColumnDouble(8);
  trial.worker_id = call.ColumnBytes(9);
  trial.device_id = call.ColumnBytes(10);
  trial.error = call.ColumnBytes(11);
  trial.finished_unix_ms = call.ColumnInt(12);
  return trial;
}

KernelRecord ReadKernel(const Call& call) {
  KernelRecord kernel;
  kernel.name = call.ColumnBytes(0);
  kernel.spec = call.ColumnBytes(1);
  kernel.updated_unix_ms = call.ColumnInt(2);
  return kernel;
}

BestRecord ReadBest(const Call& call) {
  BestRecord best;
  best.tuning_key = call.ColumnBytes(0);
  best.kernel_name = call.ColumnBytes(1);
  best.shape = call.ColumnBytes(2);
  best.device_model = call.ColumnBytes(3);
  best.toolkit = call.ColumnBytes(4);
  best.config = call.ColumnBytes(5);
  best.median_seconds = call.ColumnDouble(6);
  best.job_id = call.ColumnBytes(7);
  best.updated_unix_ms = call.ColumnInt(8);
  return best;
}

// Steps `call` to the end, reading every row with `read`.
template <typename Record>
absl::StatusOr<std::vector<Record>> ReadAll(Call& call,
                                            Record (*read)(const Call&)) {
  std::vector<Record> records;
  while (true) {
    ASSIGN_OR_RETURN(bool row, call.Step());
    if (!row) return records;
    records.push_back(read(call));
  }
}

using OwnedStmt = std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)>;

absl::StatusOr<OwnedStmt> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt,
                              nullptr);
  OwnedStmt owned(stmt, sqlite3_finalize);
  if (rc != SQLITE_OK) return SqliteError(db, rc, sql);
  return owned;
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
  call.BindInt(version).BindInt(NowUnixMs());
  return call.Execute().status();
}

absl::Status ApplyPendingMigrations(sqlite3* db) {
  RETURN_IF_ERROR(Exec(db,
                       "CREATE TABLE IF NOT EXISTS schema_migrations ("
                       "version INTEGER PRIMARY KEY, "
                       "applied_unix_ms INTEGER NOT NULL)"));
  ASSIGN_OR_RETURN(int64_t applied, AppliedVersion(db));
  for (const Migration& migration : kMigrations) {
    if (migration.version <= applied) continue;
    RETURN_IF_ERROR(Exec(db, migration.sql));
    RETURN_IF_ERROR(RecordVersion(db, migration.version));
  }
  return absl::OkStatus();
}

// BEGIN IMMEDIATE takes the write lock first, so of several processes opening
// one fresh file, one migrates and the others wait (busy_timeout) and then
// find nothing left to do.
absl::Status Migrate(sqlite3* db) {
  RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  absl::Status status = ApplyPendingMigrations(db);
  if (status.ok()) return Exec(db, "COMMIT");
  Exec(db, "ROLLBACK").IgnoreError();
  return status;
}

}  // namespace

void SqliteStore::DbCloser::operator()(sqlite3* db) const { sqlite3_close(db); }

void SqliteStore::StmtFinalizer::operator()(sqlite3_stmt* stmt) const {
  sqlite3_finalize(stmt);
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path, const Options& options) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  Db db(raw);  // sqlite3_open_v2 returns a handle to close even on failure.
  if (rc != SQLITE_OK) {
    return SqliteError(db.get(), rc, absl::StrCat("open ", path));
  }
  auto store = absl::WrapUnique(new SqliteStore(std::move(db), path));
  RETURN_IF_ERROR(store->Initialize(options));
  return store;
}

SqliteStore::SqliteStore(Db db, std::string path)
    : path_(std::move(path)), db_(std::move(db)) {}

SqliteStore::~SqliteStore() = default;

// WAL lets readers in other processes run beside a writer; with WAL,
// synchronous=NORMAL stays consistent and loses at most the last commits on
// power loss, which at-least-once delivery tolerates.
absl::Status SqliteStore::Initialize(const Options& options) {
  absl::MutexLock lock(&mu_);
  sqlite3* db = db_.get();
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  RETURN_IF_ERROR(Exec(db, "PRAGMA journal_mode = WAL"));
  RETURN_IF_ERROR(Exec(db, "PRAGMA synchronous = NORMAL"));
  RETURN_IF_ERROR(Migrate(db));
  struct stat file;
  if (::stat(path_.c_str(), &file) != 0) {
    return absl::UnavailableError(absl::StrCat("sqlite: cannot stat ", path_));
  }
  device_ = file.st_dev;
  inode_ = file.st_ino;
  static_assert(std::size(kQuerySql) == kNumQueries);
  for (int query = 0; query < kNumQueries; ++query) {
    ASSIGN_OR_RETURN(OwnedStmt stmt, Prepare(db, kQuerySql[query]));
    statements_[query].reset(stmt.release());
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::CheckFile() {
  if (!lost_.ok()) return lost_;
  struct stat file;
  if (::stat(path_.c_str(), &file) != 0 || file.st_dev != device_ ||
      file.st_ino != inode_) {
    // Writing on would go to an unlinked file and be lost at the next start;
    // a new file at the path is another database, so this stays.
    lost_ = absl::UnavailableError(absl::StrCat(
        "sqlite: the database file ", path_,
        " was deleted or replaced while open; nothing more is written. Restore "
        "the file (or its directory) and restart the coordinator"));
  }
  return lost_;
}

absl::Status SqliteStore::Noted(absl::Status status) {
  if (status.ok() || absl::IsUnavailable(status)) write_health_ = status;
  return status;
}

absl::Status SqliteStore::InTransaction(const std::function<absl::Status()>& body) {
  RETURN_IF_ERROR(CheckFile());
  sqlite3* db = db_.get();
  absl::Status status = Exec(db, "BEGIN IMMEDIATE");
  if (status.ok()) status = body();
  if (status.ok()) status = Exec(db, "COMMIT");
  if (!status.ok() && !sqlite3_get_autocommit(db)) Exec(db, "ROLLBACK").IgnoreError();
  return Noted(status);
}

absl::Status SqliteStore::PutJob(const JobRecord& job) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kPutJob].get());
  call.BindText(job.id)
      .BindText(job.kernel_name)
      .BindInt(job.state)
      .BindBlob(job.reason);
  call.BindBlob(job.spec).BindBlob(job.targets);
  call.BindInt(job.created_unix_ms).BindInt(job.updated_unix_ms);
  return Noted(call.Execute().status());
}

absl::StatusOr<JobRecord> SqliteStore::GetJob(const std::string& id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kGetJob].get());
  call.BindText(id);
  ASSIGN_OR_RETURN(bool row, call.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("no job ", id));
  return ReadJob(call);
}

absl::StatusOr<std::vector<JobRecord>> SqliteStore::ListJobs(
    bool unfinished_only, int limit) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListJobs].get());
  call.BindInt(unfinished_only ? 1 : 0)
      .BindInt(limit > 0 ? limit : -1);  // -1: all
  return ReadAll(call, &ReadJob);
}

absl::StatusOr<std::vector<bool>> SqliteStore::InsertTrials(
    const std::vector<TrialRecord>& trials) {
  absl::MutexLock lock(&mu_);
  std::vector<bool> inserted;
  inserted.reserve(trials.size());
  RETURN_IF_ERROR(InTransaction([&]() -> absl::Status {
    for (const TrialRecord& trial : trials) {
      Call call(db_.get(), statements_[kInsertTrial].get());
      call.BindText(trial.job_id).BindText(trial.tuning_key).BindText(trial.config);
      call.BindInt(trial.status).BindDouble(trial.median_seconds);
      call.BindDouble(trial.p20_seconds)
          .BindDouble(trial.p80_seconds)
          .BindInt(trial.samples);
      call.BindDouble(trial.compile_seconds).BindText(trial.worker_id);
      call.BindText(trial.device_id)
          .BindBlob(trial.error)
          .BindInt(trial.finished_unix_ms);
      ASSIGN_OR_RETURN(int changed, call.Execute());
      inserted.push_back(changed > 0);
    }
    return absl::OkStatus();
  }));
  return inserted;
}

absl::StatusOr<std::vector<TrialRecord>> SqliteStore::ListTrials(
    const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListTrials].get());
  call.BindText(job_id);
  return ReadAll(call, &ReadTrial);
}

absl::StatusOr<bool> SqliteStore::UpsertBest(const BestRecord& best) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kUpsertBest].get());
  call.BindText(best.tuning_key)
      .BindText(best.kernel_name)
      .BindText(best.shape);
  call.BindText(best.device_model).BindText(best.toolkit).BindText(best.config);
  call.BindDouble(best.median_seconds)
      .BindText(best.job_id)
      .BindInt(best.updated_unix_ms);
  absl::StatusOr<int> changed = call.Execute();
  RETURN_IF_ERROR(Noted(changed.status()));
  return *changed > 0;
}

absl::StatusOr<BestRecord> SqliteStore::GetBest(const std::string& tuning_key) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kGetBest].get());
  call.BindText(tuning_key);
  ASSIGN_OR_RETURN(bool row, call.Step());
  if (!row)
    return absl::NotFoundError(absl::StrCat("no best for ", tuning_key));
  return ReadBest(call);
}

absl::StatusOr<std::vector<BestRecord>> SqliteStore::ListBest(
    const std::string& kernel_name, const std::string& device_model,
    const std::string& toolkit) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListBest].get());
  call.BindText(kernel_name).BindText(device_model).BindText(toolkit);
  return ReadAll(call, &ReadBest);
}

absl::Status SqliteStore::PutBlobs(const std::vector<BlobRecord>& blobs) {
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    for (const BlobRecord& blob : blobs) {
      Call call(db_.get(), statements_[kPutBlob].get());
      call.BindText(blob.digest).BindBlob(blob.content);
      RETURN_IF_ERROR(call.Execute().status());
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> SqliteStore::GetBlob(const std::string& digest) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kGetBlob].get());
  call.BindText(digest);
  ASSIGN_OR_RETURN(bool row, call.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("no blob ", digest));
  return call.ColumnBytes(0);
}

absl::Status SqliteStore::PutKernel(const KernelRecord& kernel) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kPutKernel].get());
  call.BindText(kernel.name).BindBlob(kernel.spec).BindInt(kernel.updated_unix_ms);
  return Noted(call.Execute().status());
}

absl::StatusOr<std::vector<KernelRecord>> SqliteStore::ListKernels() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListKernels].get());
  return ReadAll(call, &ReadKernel);
}

absl::Status SqliteStore::CheckHealth() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  return write_health_;
}

}  // namespace tunefleet::server
