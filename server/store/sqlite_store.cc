#include "server/store/sqlite_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "server/store/rows.h"
#include "server/store/schema.h"
#include "server/store/sqlite_db.h"

namespace tunefleet::server {
namespace {

using sqlite::Call;
using sqlite::Exec;
using sqlite::OwnedStmt;
using sqlite::SqliteError;

// Indexed by SqliteStore::Query.
constexpr const char* kQuerySql[] = {
    // kPutJob
    "INSERT INTO jobs (" TF_JOB_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
    "ON CONFLICT (id) DO UPDATE SET kernel_name = excluded.kernel_name, "
    "state = excluded.state, reason = excluded.reason, spec = excluded.spec, "
    "targets = excluded.targets, created_unix_ms = excluded.created_unix_ms, "
    "updated_unix_ms = excluded.updated_unix_ms, owner = excluded.owner, "
    "replace_best = excluded.replace_best, sweep_id = excluded.sweep_id",
    // kGetJob
    "SELECT " TF_JOB_COLUMNS " FROM jobs WHERE id = ?1",
    // kListJobs
    "SELECT " TF_JOB_COLUMNS
    " FROM jobs WHERE (?1 = 0 OR state IN (1, 2)) "
    "ORDER BY created_unix_ms DESC, id DESC LIMIT ?2",
    // kQueryJobs
    "SELECT " TF_JOB_COLUMNS
    " FROM jobs WHERE (?1 = 0 OR state = ?1) AND (?2 = '' OR kernel_name = ?2) "
    "AND (?3 = '' OR owner = ?3) AND (?7 = '' OR sweep_id = ?7) "
    "AND (?5 = '' OR (created_unix_ms, id) < (?4, ?5)) "
    "ORDER BY created_unix_ms DESC, id DESC LIMIT ?6",
    // kInsertTrial
    "INSERT INTO trials (" TF_TRIAL_COLUMNS
    ") VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
    "?20, ?21, ?22) "
    "ON CONFLICT (job_id, tuning_key, config, round) DO NOTHING",
    // kListTrials
    "SELECT " TF_TRIAL_READ_COLUMNS " FROM trials WHERE job_id = ?1 ORDER BY seq",
    // kQueryTrials: one row more than asked, to know whether a page follows
    "SELECT " TF_TRIAL_READ_COLUMNS
    ", seq FROM trials WHERE job_id = ?1 AND (?2 = 0 OR status = ?2) "
    "AND seq > ?3 ORDER BY seq LIMIT ?4",
    // kListKeyTrials
    "SELECT " TF_TRIAL_READ_COLUMNS
    " FROM trials WHERE tuning_key = ?1 AND status = 1 AND excluded = 0 ORDER BY seq",
    // kListReplacingJobs
    "SELECT id FROM jobs WHERE replace_best = 1 AND EXISTS "
    "(SELECT 1 FROM trials WHERE trials.job_id = jobs.id AND trials.tuning_key = ?1) "
    "ORDER BY id",
    // kExcludeTrials
    "UPDATE trials SET excluded = 1 WHERE excluded = 0 "
    "AND (?1 = '' OR principal = ?1 OR worker_id = ?1) "
    "AND (?2 = '' OR tuning_key = ?2) AND (?3 = '' OR job_id = ?3) "
    "RETURNING tuning_key, principal",
    // kUpsertBest
    "INSERT INTO best_configs (" TF_BEST_COLUMNS
    ") VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) "
    "ON CONFLICT (tuning_key) DO UPDATE SET kernel_name = "
    "excluded.kernel_name, "
    "shape = excluded.shape, device_model = excluded.device_model, "
    "toolkit = excluded.toolkit, config = excluded.config, "
    "median_seconds = excluded.median_seconds, job_id = excluded.job_id, "
    "updated_unix_ms = excluded.updated_unix_ms, imported = excluded.imported, "
    "origin = excluded.origin, evidence = excluded.evidence "
    "WHERE excluded.median_seconds < best_configs.median_seconds",
    // kPutBest
    "INSERT OR REPLACE INTO best_configs (" TF_BEST_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    // kImportBest
    "INSERT INTO best_configs (" TF_BEST_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) "
    "ON CONFLICT (tuning_key) DO UPDATE SET kernel_name = excluded.kernel_name, "
    "shape = excluded.shape, device_model = excluded.device_model, "
    "toolkit = excluded.toolkit, config = excluded.config, "
    "median_seconds = excluded.median_seconds, job_id = excluded.job_id, "
    "updated_unix_ms = excluded.updated_unix_ms, imported = excluded.imported, "
    "origin = excluded.origin, evidence = excluded.evidence "
    "WHERE best_configs.imported <> 0 OR ?13 <> 0",
    // kDeleteBest
    "DELETE FROM best_configs WHERE tuning_key = ?1",
    // kGetBest
    "SELECT " TF_BEST_COLUMNS " FROM best_configs WHERE tuning_key = ?1",
    // kListBest
    "SELECT " TF_BEST_COLUMNS
    " FROM best_configs WHERE (?1 = '' OR kernel_name = ?1) "
    "AND (?2 = '' OR device_model = ?2) AND (?3 = '' OR toolkit = ?3) "
    "ORDER BY tuning_key",
    // kPutBlob
    "INSERT INTO blobs (" TF_BLOB_COLUMNS
    ") VALUES (?1, ?2) ON CONFLICT (digest) DO NOTHING",
    // kGetBlob
    "SELECT content FROM blobs WHERE digest = ?1",
    // kPutKernel
    "INSERT INTO kernels (" TF_KERNEL_COLUMNS
    ") VALUES (?1, ?2, ?3) "
    "ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, "
    "updated_unix_ms = excluded.updated_unix_ms",
    // kListKernels
    "SELECT " TF_KERNEL_COLUMNS " FROM kernels ORDER BY name",
    // kPutToken
    "INSERT INTO tokens (" TF_TOKEN_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
    "ON CONFLICT (id) DO UPDATE SET name = excluded.name, role = excluded.role, "
    "secret_hash = excluded.secret_hash, created_unix_ms = excluded.created_unix_ms, "
    "revoked_unix_ms = excluded.revoked_unix_ms",
    // kListTokens
    "SELECT " TF_TOKEN_COLUMNS " FROM tokens ORDER BY id",
    // kPutQuarantine
    "INSERT OR REPLACE INTO quarantine (" TF_QUARANTINE_COLUMNS ") VALUES (?1, ?2, ?3)",
    // kDeleteQuarantine
    "DELETE FROM quarantine WHERE principal = ?1",
    // kListQuarantine
    "SELECT " TF_QUARANTINE_COLUMNS " FROM quarantine ORDER BY principal",
    // kPutProfile
    "INSERT OR REPLACE INTO profiles (" TF_PROFILE_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5)",
    // kListProfiles
    "SELECT " TF_PROFILE_COLUMNS
    " FROM profiles WHERE job_id = ?1 ORDER BY tuning_key, config",
    // kPutProfileRequest
    "INSERT OR REPLACE INTO profile_requests (" TF_PROFILE_REQUEST_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    // kListProfileRequests
    "SELECT " TF_PROFILE_REQUEST_COLUMNS
    " FROM profile_requests ORDER BY job_id, tuning_key, rank",
    // kDeleteProfileRequest
    "DELETE FROM profile_requests WHERE job_id = ?1 AND tuning_key = ?2 AND config = ?3",
    // kPutSecret
    "INSERT INTO coordinator_secrets (name, secret, created_unix_ms) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (name) DO NOTHING",
    // kGetSecret
    "SELECT secret FROM coordinator_secrets WHERE name = ?1",
};

// A result row of `call`, as rows.h reads it: SQLite stores text and
// blobs alike, and booleans as 0/1.
struct SqliteRow {
  const Call& call;
  std::string Text(int column) const { return call.ColumnBytes(column); }
  std::string Bytes(int column) const { return call.ColumnBytes(column); }
  int64_t Int(int column) const { return call.ColumnInt(column); }
  double Double(int column) const { return call.ColumnDouble(column); }
  bool Bool(int column) const { return call.ColumnInt(column) != 0; }
};

std::string ReadId(const Call& call) { return rows::Id(SqliteRow{call}); }
JobRecord ReadJob(const Call& call) { return rows::Job(SqliteRow{call}); }
TrialRecord ReadTrial(const Call& call) { return rows::Trial(SqliteRow{call}); }
QuarantineRecord ReadQuarantine(const Call& call) { return rows::Quarantine(SqliteRow{call}); }
BestRecord ReadBest(const Call& call) { return rows::Best(SqliteRow{call}); }
KernelRecord ReadKernel(const Call& call) { return rows::Kernel(SqliteRow{call}); }
TokenRecord ReadToken(const Call& call) { return rows::Token(SqliteRow{call}); }
ProfileRecord ReadProfile(const Call& call) { return rows::Profile(SqliteRow{call}); }
ProfileRequestRecord ReadProfileRequest(const Call& call) {
  return rows::ProfileRequest(SqliteRow{call});
}

void BindBest(Call& call, const BestRecord& best) {
  call.BindText(best.tuning_key).BindText(best.kernel_name).BindText(best.shape);
  call.BindText(best.device_model).BindText(best.toolkit).BindText(best.config);
  call.BindDouble(best.median_seconds).BindText(best.job_id);
  call.BindInt(best.updated_unix_ms).BindInt(best.imported ? 1 : 0).BindText(best.origin);
  call.BindBlob(best.evidence);
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

absl::Status InsertBlobRow(sqlite3* db, sqlite3_stmt* stmt,
                           const BlobRecord& blob) {
  Call call(db, stmt);
  call.BindText(blob.digest).BindBlob(blob.content);
  return call.Execute().status();
}

absl::StatusOr<bool> InsertTrialRow(sqlite3* db, sqlite3_stmt* stmt,
                                    const TrialRecord& trial) {
  Call call(db, stmt);
  call.BindText(trial.job_id).BindText(trial.tuning_key).BindText(trial.config);
  call.BindInt(trial.status).BindDouble(trial.median_seconds);
  call.BindDouble(trial.p20_seconds)
      .BindDouble(trial.p80_seconds)
      .BindInt(trial.samples);
  call.BindDouble(trial.compile_seconds).BindText(trial.worker_id);
  call.BindText(trial.device_id)
      .BindBlob(trial.error)
      .BindInt(trial.finished_unix_ms);
  call.BindText(trial.principal).BindDouble(trial.clock_mhz);
  call.BindInt(static_cast<int>(trial.round)).BindInt(trial.cut_early ? 1 : 0);
  call.BindInt(trial.rounds).BindDouble(trial.rounds_cv);
  call.BindInt(trial.retaken_samples).BindInt(trial.low_clock_samples);
  call.BindDouble(trial.calibration_seconds);
  ASSIGN_OR_RETURN(int changed, call.Execute());
  return changed > 0;
}

std::string ParentOf(const std::string& path) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

absl::Status LostError(const std::string& path, absl::string_view how) {
  return absl::UnavailableError(absl::StrCat(
      "the SQLite database file ", path, " ", how,
      " while open; nothing more is written to it; restart the coordinator "
      "once the file is restored"));
}

}  // namespace

void SqliteStore::DbCloser::operator()(sqlite3* db) const { sqlite3_close(db); }

void SqliteStore::StmtFinalizer::operator()(sqlite3_stmt* stmt) const {
  sqlite3_finalize(stmt);
}

bool SqliteStore::IsInMemory(const std::string& path) {
  if (path == ":memory:") return true;
  if (!absl::StartsWith(path, "file:")) return false;
  const size_t query = path.find('?');
  if (query == std::string::npos) return false;
  for (absl::string_view parameter : absl::StrSplit(path.substr(query + 1), '&')) {
    if (parameter == "mode=memory") return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(
    const std::string& path, const Options& options) {
  sqlite3* raw = nullptr;
  const bool in_memory = IsInMemory(path);
  int rc = sqlite3_open_v2(path.c_str(), &raw,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                               (in_memory ? SQLITE_OPEN_URI : 0),
                           nullptr);
  Db db(raw);  // sqlite3_open_v2 returns a handle to close even on failure.
  if (rc != SQLITE_OK) {
    return SqliteError(db.get(), rc, absl::StrCat("open ", path));
  }
  // SQLite opens a file it may not write read-only, without a word.
  if (sqlite3_db_readonly(db.get(), "main") == 1) {
    return absl::UnavailableError(
        absl::StrCat("sqlite: read-only: the database file ", path,
                     " cannot be opened for writing"));
  }
  std::optional<FileId> file;
  if (!in_memory) {
    ASSIGN_OR_RETURN(file, IdentityOf(path));
    if (!file.has_value()) return LostError(path, "was deleted");
  }
  auto store = absl::WrapUnique(new SqliteStore(std::move(db), path, file));
  RETURN_IF_ERROR(store->Initialize(options));
  return store;
}

SqliteStore::SqliteStore(Db db, std::string path, std::optional<FileId> file)
    : path_(std::move(path)), file_(file), db_(std::move(db)) {}

absl::StatusOr<std::optional<SqliteStore::FileId>> SqliteStore::IdentityOf(
    const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) == 0) {
    return FileId{static_cast<uint64_t>(info.st_dev),
                  static_cast<uint64_t>(info.st_ino)};
  }
  if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
  return absl::UnavailableError(
      absl::StrCat("cannot stat the SQLite database file ", path, ": ",
                   std::strerror(errno)));
}

// Once the file is lost, SQLite's own close neither checkpoints nor deletes
// the -wal and -shm files, and a WAL left at the path would be replayed into
// whatever database is put there next. So: close without SQLite's
// checkpoint, and when the -wal and -shm at the path are still ours, copy
// the committed WAL into our own (moved or unlinked) file, then remove them.
// Files at those names that are not ours are left alone.
SqliteStore::~SqliteStore() {
  absl::MutexLock lock(&mu_);
  if (!file_.has_value() || CheckFile().ok()) return;
  sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  const bool ours =
      IsOurs(path_ + "-wal", wal_) && IsOurs(path_ + "-shm", shm_);
  if (ours) {
    sqlite3_wal_checkpoint_v2(db_.get(), nullptr, SQLITE_CHECKPOINT_TRUNCATE,
                              nullptr, nullptr);
  }
  for (Stmt& stmt : statements_) stmt.reset();
  db_.reset();
  if (!ours) return;
  std::error_code ignored;
  std::filesystem::remove(path_ + "-wal", ignored);
  std::filesystem::remove(path_ + "-shm", ignored);
}

bool SqliteStore::IsOurs(const std::string& path,
                         const std::optional<FileId>& opened) {
  absl::StatusOr<std::optional<FileId>> now = IdentityOf(path);
  return opened.has_value() && now.ok() && *now == opened;
}

absl::Status SqliteStore::CheckFile() {
  if (!file_.has_value()) return absl::OkStatus();  // in memory: nothing to lose
  if (!lost_.ok()) return lost_;
  ASSIGN_OR_RETURN(std::optional<FileId> now, IdentityOf(path_));
  if (now.has_value()) {
    if (*now == *file_) return absl::OkStatus();
    lost_ = LostError(path_, "was replaced by another file");
    return lost_;
  }
  ASSIGN_OR_RETURN(std::optional<FileId> parent, IdentityOf(ParentOf(path_)));
  lost_ =
      LostError(path_, parent.has_value() ? "was deleted"
                                          : "was deleted with its directory");
  return lost_;
}

template <typename T, typename Body>
absl::StatusOr<T> SqliteStore::Write(Body body) {
  RETURN_IF_ERROR(CheckFile());
  absl::StatusOr<T> result = sqlite::InTransaction<T>(db_.get(), std::move(body));
  if (result.ok()) {
    last_write_error_ = absl::OkStatus();
  } else if (absl::IsUnavailable(result.status())) {
    last_write_error_ = absl::UnavailableError(
        absl::StrCat("the last write to the SQLite database ", path_,
                     " failed: ", result.status().message()));
  }
  return result;
}

// Switching a fresh file to WAL takes an exclusive lock, and SQLite answers
// SQLITE_BUSY at once, without calling the busy handler, to a connection
// that meets another one switching the same file: such a connection tries
// again until `busy_timeout_ms` have passed.
absl::Status UseWal(sqlite3* db, int busy_timeout_ms) {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(busy_timeout_ms);
  for (;;) {
    const int rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return absl::OkStatus();
    if ((rc & 0xff) != SQLITE_BUSY || absl::Now() >= deadline) {
      return SqliteError(db, rc, "PRAGMA journal_mode = WAL");
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

// WAL lets readers in other processes run beside a writer; with WAL,
// synchronous=NORMAL stays consistent and loses at most the last commits on
// power loss, which at-least-once delivery tolerates.
absl::Status SqliteStore::Initialize(const Options& options) {
  absl::MutexLock lock(&mu_);
  sqlite3* db = db_.get();
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  if (file_.has_value()) {  // an in-memory database keeps its own journal
    RETURN_IF_ERROR(UseWal(db, options.busy_timeout_ms));
    RETURN_IF_ERROR(Exec(db, "PRAGMA synchronous = NORMAL"));
    RETURN_IF_ERROR(sqlite::Migrate(db));
  } else {
    RETURN_IF_ERROR(sqlite::MigrateSharedCache(db, options.busy_timeout_ms));
  }
  static_assert(std::size(kQuerySql) == kNumQueries);
  for (int query = 0; query < kNumQueries; ++query) {
    ASSIGN_OR_RETURN(OwnedStmt stmt, sqlite::Prepare(db, kQuerySql[query]));
    statements_[query].reset(stmt.release());
  }
  if (file_.has_value()) {
    ASSIGN_OR_RETURN(wal_, IdentityOf(path_ + "-wal"));
    ASSIGN_OR_RETURN(shm_, IdentityOf(path_ + "-shm"));
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::PutJob(const JobRecord& job) {
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
           Call call(db_.get(), statements_[kPutJob].get());
           call.BindText(job.id)
               .BindText(job.kernel_name)
               .BindInt(job.state)
               .BindBlob(job.reason);
           call.BindBlob(job.spec).BindBlob(job.targets);
           call.BindInt(job.created_unix_ms).BindInt(job.updated_unix_ms);
           call.BindText(job.owner).BindInt(job.replace_best ? 1 : 0).BindText(job.sweep_id);
           RETURN_IF_ERROR(call.Execute().status());
           return true;
         })
      .status();
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

absl::StatusOr<std::vector<JobRecord>> SqliteStore::QueryJobs(const JobQuery& query) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kQueryJobs].get());
  call.BindInt(query.state).BindText(query.kernel_name).BindText(query.owner);
  call.BindInt(query.after_created_unix_ms).BindText(query.after_id).BindInt(query.limit);
  call.BindText(query.sweep_id);
  return ReadAll(call, &ReadJob);
}

absl::StatusOr<std::vector<bool>> SqliteStore::InsertTrials(
    const std::vector<TrialRecord>& trials) {
  if (trials.empty()) return std::vector<bool>();
  absl::MutexLock lock(&mu_);
  sqlite3* db = db_.get();
  sqlite3_stmt* stmt = statements_[kInsertTrial].get();
  return Write<std::vector<bool>>([&]() -> absl::StatusOr<std::vector<bool>> {
    std::vector<bool> inserted;
    inserted.reserve(trials.size());
    for (const TrialRecord& trial : trials) {
      ASSIGN_OR_RETURN(bool is_new, InsertTrialRow(db, stmt, trial));
      inserted.push_back(is_new);
    }
    return inserted;
  });
}

absl::StatusOr<std::vector<TrialRecord>> SqliteStore::ListTrials(
    const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListTrials].get());
  call.BindText(job_id);
  return ReadAll(call, &ReadTrial);
}

absl::StatusOr<TrialPage> SqliteStore::QueryTrials(const TrialQuery& query) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kQueryTrials].get());
  call.BindText(query.job_id).BindInt(query.status).BindInt(query.after_seq);
  call.BindInt(int64_t{query.limit} + 1);
  TrialPage page;
  int64_t last_seq = 0;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, call.Step());
    if (!row) break;
    if (static_cast<int>(page.trials.size()) == query.limit) {
      page.next_seq = last_seq;
      break;
    }
    page.trials.push_back(ReadTrial(call));
    last_seq = call.ColumnInt(TF_TRIAL_COUNT + 1);
  }
  return page;
}

absl::StatusOr<std::vector<TrialRecord>> SqliteStore::ListKeyTrials(
    const std::string& tuning_key) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListKeyTrials].get());
  call.BindText(tuning_key);
  return ReadAll(call, &ReadTrial);
}

absl::StatusOr<std::vector<std::string>> SqliteStore::ListReplacingJobs(
    const std::string& tuning_key) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListReplacingJobs].get());
  call.BindText(tuning_key);
  return ReadAll(call, &ReadId);
}

absl::StatusOr<Exclusion> SqliteStore::ExcludeTrials(const TrialFilter& filter) {
  RETURN_IF_ERROR(CheckFilter(filter));
  absl::MutexLock lock(&mu_);
  return Write<Exclusion>([&]() -> absl::StatusOr<Exclusion> {
    Call call(db_.get(), statements_[kExcludeTrials].get());
    call.BindText(filter.worker).BindText(filter.tuning_key).BindText(filter.job_id);
    std::set<std::string> keys;
    std::set<std::string> principals;
    Exclusion exclusion;
    for (;;) {
      ASSIGN_OR_RETURN(bool row, call.Step());
      if (!row) break;
      ++exclusion.trials;
      keys.insert(call.ColumnBytes(0));
      if (std::string principal = call.ColumnBytes(1); !principal.empty()) {
        principals.insert(std::move(principal));
      }
    }
    exclusion.tuning_keys.assign(keys.begin(), keys.end());
    exclusion.principals.assign(principals.begin(), principals.end());
    return exclusion;
  });
}

absl::Status SqliteStore::PutBest(const BestRecord& best) {
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
           Call call(db_.get(), statements_[kPutBest].get());
           BindBest(call, best);
           RETURN_IF_ERROR(call.Execute().status());
           return true;
         })
      .status();
}

absl::StatusOr<bool> SqliteStore::DeleteBest(const std::string& tuning_key) {
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
    Call call(db_.get(), statements_[kDeleteBest].get());
    call.BindText(tuning_key);
    ASSIGN_OR_RETURN(int changed, call.Execute());
    return changed > 0;
  });
}

absl::Status SqliteStore::PutQuarantine(const QuarantineRecord& record) {
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
           Call call(db_.get(), statements_[kPutQuarantine].get());
           call.BindText(record.principal).BindBlob(record.reason);
           call.BindInt(record.since_unix_ms);
           RETURN_IF_ERROR(call.Execute().status());
           return true;
         })
      .status();
}

absl::StatusOr<bool> SqliteStore::DeleteQuarantine(const std::string& principal) {
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
    Call call(db_.get(), statements_[kDeleteQuarantine].get());
    call.BindText(principal);
    ASSIGN_OR_RETURN(int changed, call.Execute());
    return changed > 0;
  });
}

absl::StatusOr<std::vector<QuarantineRecord>> SqliteStore::ListQuarantine() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListQuarantine].get());
  return ReadAll(call, &ReadQuarantine);
}

absl::StatusOr<bool> SqliteStore::UpsertBest(const BestRecord& best) {
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
    Call call(db_.get(), statements_[kUpsertBest].get());
    BindBest(call, best);
    ASSIGN_OR_RETURN(int changed, call.Execute());
    return changed > 0;
  });
}

absl::StatusOr<bool> SqliteStore::ImportBest(const BestRecord& best, bool overwrite) {
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
    Call call(db_.get(), statements_[kImportBest].get());
    BindBest(call, best);
    call.BindInt(overwrite ? 1 : 0);
    ASSIGN_OR_RETURN(int changed, call.Execute());
    return changed > 0;
  });
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
  if (blobs.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  sqlite3* db = db_.get();
  sqlite3_stmt* stmt = statements_[kPutBlob].get();
  return Write<bool>([&]() -> absl::StatusOr<bool> {
           for (const BlobRecord& blob : blobs) {
             RETURN_IF_ERROR(InsertBlobRow(db, stmt, blob));
           }
           return true;
         })
      .status();
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
  return Write<bool>([&]() -> absl::StatusOr<bool> {
           Call call(db_.get(), statements_[kPutKernel].get());
           call.BindText(kernel.name).BindBlob(kernel.spec);
           call.BindInt(kernel.updated_unix_ms);
           RETURN_IF_ERROR(call.Execute().status());
           return true;
         })
      .status();
}

absl::StatusOr<std::vector<KernelRecord>> SqliteStore::ListKernels() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListKernels].get());
  return ReadAll(call, &ReadKernel);
}

absl::Status SqliteStore::PutToken(const TokenRecord& token) {
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
           Call call(db_.get(), statements_[kPutToken].get());
           call.BindText(token.id).BindText(token.name).BindText(token.role);
           call.BindText(token.secret_hash).BindInt(token.created_unix_ms);
           call.BindInt(token.revoked_unix_ms);
           RETURN_IF_ERROR(call.Execute().status());
           return true;
         })
      .status();
}

absl::StatusOr<std::vector<TokenRecord>> SqliteStore::ListTokens() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListTokens].get());
  return ReadAll(call, &ReadToken);
}

absl::Status SqliteStore::PutProfile(const ProfileRecord& profile) {
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
           Call call(db_.get(), statements_[kPutProfile].get());
           call.BindText(profile.job_id).BindText(profile.tuning_key).BindText(profile.config);
           call.BindBlob(profile.profile).BindInt(profile.profiled_unix_ms);
           RETURN_IF_ERROR(call.Execute().status());
           Call done(db_.get(), statements_[kDeleteProfileRequest].get());
           done.BindText(profile.job_id).BindText(profile.tuning_key).BindText(profile.config);
           RETURN_IF_ERROR(done.Execute().status());
           return true;
         })
      .status();
}

absl::StatusOr<std::vector<ProfileRecord>> SqliteStore::ListProfiles(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListProfiles].get());
  call.BindText(job_id);
  return ReadAll(call, &ReadProfile);
}

absl::Status SqliteStore::PutProfileRequests(const std::vector<ProfileRequestRecord>& requests) {
  if (requests.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  return Write<bool>([&]() -> absl::StatusOr<bool> {
           for (const ProfileRequestRecord& request : requests) {
             Call call(db_.get(), statements_[kPutProfileRequest].get());
             call.BindText(request.job_id).BindText(request.tuning_key);
             call.BindText(request.device_model).BindText(request.toolkit);
             call.BindText(request.config).BindInt(request.rank);
             call.BindDouble(request.median_seconds).BindInt(request.requested_unix_ms);
             RETURN_IF_ERROR(call.Execute().status());
           }
           return true;
         })
      .status();
}

absl::StatusOr<std::vector<ProfileRequestRecord>> SqliteStore::ListProfileRequests() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  Call call(db_.get(), statements_[kListProfileRequests].get());
  return ReadAll(call, &ReadProfileRequest);
}

absl::StatusOr<std::string> SqliteStore::Secret(const std::string& name,
                                                const std::string& fresh) {
  if (fresh.empty()) return absl::InvalidArgumentError("a secret is not empty");
  absl::MutexLock lock(&mu_);
  return Write<std::string>([&]() -> absl::StatusOr<std::string> {
    Call put(db_.get(), statements_[kPutSecret].get());
    put.BindText(name).BindBlob(fresh).BindInt(schema::NowUnixMs());
    RETURN_IF_ERROR(put.Execute().status());
    Call get(db_.get(), statements_[kGetSecret].get());
    get.BindText(name);
    ASSIGN_OR_RETURN(bool row, get.Step());
    if (!row) return absl::InternalError("sqlite: the secret just stored is not there");
    return get.ColumnBytes(0);
  });
}

// No write probe: it would append to the WAL on every call, and the
// coordinator writes often enough for the last outcome to be current.
absl::Status SqliteStore::CheckHealth() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckFile());
  return last_write_error_;
}

}  // namespace tunefleet::server
