#include "server/store/postgres_store.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <set>
#include <tuple>
#include <optional>
#include <pqxx/pqxx>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "server/store/postgres_db.h"
#include "server/store/postgres_queries.h"
#include "server/store/rows.h"
#include "server/store/schema.h"

namespace tunefleet::server {
namespace {

using postgres::ApplyPendingMigrations;
using postgres::CheckFence;
using postgres::ClassifyCurrentException;
using postgres::Failure;

// libpq sends text parameters as C strings: a NUL byte would silently cut
// the value short, so refuse it instead.
absl::Status CheckText(std::initializer_list<absl::string_view> fields) {
  for (absl::string_view field : fields) {
    if (field.find('\0') != absl::string_view::npos) {
      return absl::InvalidArgumentError("text field contains a NUL byte");
    }
  }
  return absl::OkStatus();
}

pqxx::binarystring Bytes(const std::string& value) {
  return pqxx::binarystring(value);
}

std::string ReadBytes(const pqxx::field& field) {
  return pqxx::binarystring(field).str();
}

// A result row as rows.h reads it.
struct PgRow {
  const pqxx::row& row;
  std::string Text(int column) const { return row[column].as<std::string>(); }
  std::string Bytes(int column) const { return ReadBytes(row[column]); }
  int64_t Int(int column) const { return row[column].as<int64_t>(); }
  double Double(int column) const { return row[column].as<double>(); }
  bool Bool(int column) const { return row[column].as<bool>(); }
};

std::string ReadId(const pqxx::row& row) { return rows::Id(PgRow{row}); }
JobRecord ReadJob(const pqxx::row& row) { return rows::Job(PgRow{row}); }
TrialRecord ReadTrial(const pqxx::row& row) { return rows::Trial(PgRow{row}); }
QuarantineRecord ReadQuarantine(const pqxx::row& row) { return rows::Quarantine(PgRow{row}); }
BestRecord ReadBest(const pqxx::row& row) { return rows::Best(PgRow{row}); }
KernelRecord ReadKernel(const pqxx::row& row) { return rows::Kernel(PgRow{row}); }
TokenRecord ReadToken(const pqxx::row& row) { return rows::Token(PgRow{row}); }
ProfileRecord ReadProfile(const pqxx::row& row) { return rows::Profile(PgRow{row}); }
ProfileRequestRecord ReadProfileRequest(const pqxx::row& row) {
  return rows::ProfileRequest(PgRow{row});
}

template <typename Record>
std::vector<Record> ReadAll(const pqxx::result& result,
                            Record (*read)(const pqxx::row&)) {
  std::vector<Record> records;
  records.reserve(result.size());
  for (const pqxx::row& row : result) records.push_back(read(row));
  return records;
}

template <typename Record>
std::optional<Record> ReadOne(const pqxx::result& result,
                              Record (*read)(const pqxx::row&)) {
  if (result.empty()) return std::nullopt;
  return read(result[0]);
}

// The first key of the advisory locks that serialize trial batches of one
// job (the second is the hash of the job id): "trl" in ASCII.
constexpr int kTrialLockClass = 0x74726c;

// Trials per INSERT statement (TF_TRIAL_COUNT parameters each; PostgreSQL
// takes at most 65,535 parameters per statement).
constexpr size_t kTrialsPerStatement = 1000;

// A double as text that reads back to the same double.
std::string ExactText(double value) { return absl::StrFormat("%.17g", value); }

// Inserts `rows` (indices into `trials`) with one multi-row statement, one
// round trip; marks in `inserted` the rows that were new. Parameters go as
// text (libpqxx 6 has no array parameters); the server converts them to the
// columns' types, bytea from its hex form. Throws what pqxx throws.
void InsertTrialRows(pqxx::work& txn, const std::vector<TrialRecord>& trials,
                     absl::Span<const size_t> rows, std::vector<bool>* inserted) {
  std::string sql = "INSERT INTO trials (" TF_TRIAL_COLUMNS ") VALUES ";
  std::vector<std::string> params;
  params.reserve(rows.size() * TF_TRIAL_COUNT);
  for (size_t i : rows) {
    const TrialRecord& t = trials[i];
    absl::StrAppend(&sql, params.empty() ? "" : ",", "(");
    for (int column = 0; column < TF_TRIAL_COUNT; ++column) {
      absl::StrAppend(&sql, column == 0 ? "" : ",", "$", params.size() + column + 1);
    }
    absl::StrAppend(&sql, ")");
    for (std::string value :
         {t.job_id, t.tuning_key, t.config, absl::StrCat(t.status),
          ExactText(t.median_seconds), ExactText(t.p20_seconds), ExactText(t.p80_seconds),
          absl::StrCat(t.samples), ExactText(t.compile_seconds), t.worker_id, t.device_id,
          absl::StrCat("\\x", absl::BytesToHexString(t.error)),
          absl::StrCat(t.finished_unix_ms), t.principal, ExactText(t.clock_mhz),
          absl::StrCat(static_cast<int>(t.round)), std::string(t.cut_early ? "true" : "false"),
          absl::StrCat(t.rounds), ExactText(t.rounds_cv), absl::StrCat(t.retaken_samples),
          absl::StrCat(t.low_clock_samples), ExactText(t.calibration_seconds)}) {
      params.push_back(std::move(value));
    }
  }
  absl::StrAppend(&sql,
                  " ON CONFLICT (job_id, tuning_key, config, round) DO NOTHING "
                  "RETURNING job_id, tuning_key, config, round");
  pqxx::result result = txn.exec_params(sql, pqxx::prepare::make_dynamic_params(params));
  std::set<std::tuple<std::string, std::string, std::string, int>> fresh;
  for (const pqxx::row& row : result) {
    fresh.emplace(row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>(),
                  row[3].as<int>());
  }
  // A key twice in the batch: the first row (in batch order) is the new one.
  for (size_t i : rows) {
    const TrialRecord& t = trials[i];
    (*inserted)[i] =
        fresh.erase({t.job_id, t.tuning_key, t.config, static_cast<int>(t.round)}) > 0;
  }
}

}  // namespace

class PostgresStore::Connection {
 public:
  // Throws what pqxx throws when the server cannot be reached.
  explicit Connection(const std::string& conninfo) : connection_(conninfo) {
    for (const postgres::Query& query : postgres::kAllQueries) {
      connection_.prepare(query.name, query.sql);
    }
  }
  pqxx::connection& get() { return connection_; }

 private:
  pqxx::connection connection_;
};

class PostgresStore::Lease {
 public:
  Lease(PostgresStore* store, std::unique_ptr<Connection> connection)
      : store_(store), connection_(std::move(connection)) {}
  Lease(Lease&& other)
      : store_(std::exchange(other.store_, nullptr)),
        connection_(std::move(other.connection_)) {}
  Lease& operator=(Lease&&) = delete;
  ~Lease() {
    if (store_ != nullptr) store_->Release(std::move(connection_));
  }

  pqxx::connection& get() { return connection_->get(); }
  // Closes the connection instead of returning it to the pool.
  void Discard() { connection_.reset(); }

 private:
  PostgresStore* store_;
  std::unique_ptr<Connection> connection_;
};

absl::StatusOr<std::unique_ptr<PostgresStore>> PostgresStore::Open(
    const std::string& conninfo, const Options& options) {
  auto store = absl::WrapUnique(new PostgresStore(conninfo, options));
  RETURN_IF_ERROR(store->Migrate());
  return store;
}

absl::Status PostgresStore::Migrate() {
  return Transact<bool>("migrate",
                        [](pqxx::work& txn) {
                          ApplyPendingMigrations(txn);
                          return true;
                        })
      .status();
}

PostgresStore::PostgresStore(std::string conninfo, const Options& options)
    : conninfo_(std::move(conninfo)), options_(options) {}

PostgresStore::~PostgresStore() = default;

bool PostgresStore::CanAcquire() const {
  return !idle_.empty() || open_ < options_.max_connections;
}

absl::StatusOr<PostgresStore::Lease> PostgresStore::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(this, &PostgresStore::CanAcquire),
                              options_.acquire_timeout)) {
      return absl::UnavailableError("postgres: no free connection in the pool");
    }
    if (!idle_.empty()) {
      std::unique_ptr<Connection> connection = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(connection));
    }
    ++open_;  // Reserve the slot; connect outside the lock.
  }
  try {
    return Lease(this, std::make_unique<Connection>(conninfo_));
  } catch (...) {
    Release(nullptr);
    return ClassifyCurrentException("connect").status;
  }
}

void PostgresStore::DropIdleConnections() {
  std::vector<std::unique_ptr<Connection>> dropped;
  {
    absl::MutexLock lock(&mu_);
    open_ -= static_cast<int>(idle_.size());
    dropped.swap(idle_);
  }
  // Closing happens outside the lock; a close never throws out of here.
  try {
    dropped.clear();
  } catch (...) {
  }
}

void PostgresStore::Release(std::unique_ptr<Connection> connection) {
  absl::MutexLock lock(&mu_);
  if (connection != nullptr && connection->get().is_open()) {
    idle_.push_back(std::move(connection));
  } else {
    --open_;
  }
}

// Each attempt borrows a connection; a broken one is discarded, so the retry
// reconnects and prepares the statements afresh.
template <typename T, typename Body>
absl::StatusOr<T> PostgresStore::Transact(absl::string_view what, Body body) {
  constexpr int kAttempts = 2;
  for (int attempt = 1;; ++attempt) {
    ASSIGN_OR_RETURN(Lease lease, Acquire());
    try {
      pqxx::work txn(lease.get());
      T result = body(txn);
      txn.commit();
      return result;
    } catch (...) {
      Failure failure = ClassifyCurrentException(what);
      if (failure.connection_lost) {
        lease.Discard();
        // The server went away: every idle connection is as dead as this
        // one, so the retry must open a fresh one.
        DropIdleConnections();
      }
      if (!failure.retry || attempt == kAttempts) return failure.status;
    }
  }
}

template <typename T, typename Body>
absl::StatusOr<T> PostgresStore::Write(absl::string_view what, Body body) {
  return Transact<T>(what, [&](pqxx::work& txn) {
    if (options_.fence != nullptr) CheckFence(txn, options_.fence->epoch());
    return body(txn);
  });
}

absl::Status PostgresStore::PutJob(const JobRecord& job) {
  RETURN_IF_ERROR(CheckText({job.id, job.kernel_name, job.owner, job.sweep_id}));
  return Write<bool>("PutJob",
                        [&](pqxx::work& txn) {
                          txn.exec_prepared(
                              postgres::kPutJob.name, job.id, job.kernel_name, job.state,
                              Bytes(job.reason), Bytes(job.spec),
                              Bytes(job.targets), job.created_unix_ms,
                              job.updated_unix_ms, job.owner, job.replace_best,
                              job.sweep_id);
                          return true;
                        })
      .status();
}

absl::StatusOr<JobRecord> PostgresStore::GetJob(const std::string& id) {
  RETURN_IF_ERROR(CheckText({id}));
  ASSIGN_OR_RETURN(
      std::optional<JobRecord> job,
      Transact<std::optional<JobRecord>>("GetJob", [&](pqxx::work& txn) {
        return ReadOne(txn.exec_prepared(postgres::kGetJob.name, id), &ReadJob);
      }));
  if (!job.has_value()) return absl::NotFoundError(absl::StrCat("no job ", id));
  return *std::move(job);
}

absl::StatusOr<std::vector<JobRecord>> PostgresStore::ListJobs(
    bool unfinished_only, int limit) {
  const int64_t rows = limit > 0 ? limit : std::numeric_limits<int64_t>::max();
  return Transact<std::vector<JobRecord>>("ListJobs", [&](pqxx::work& txn) {
    return ReadAll(txn.exec_prepared(postgres::kListJobs.name, unfinished_only, rows),
                   &ReadJob);
  });
}

absl::StatusOr<std::vector<JobRecord>> PostgresStore::QueryJobs(const JobQuery& query) {
  RETURN_IF_ERROR(CheckText({query.kernel_name, query.owner, query.after_id, query.sweep_id}));
  return Transact<std::vector<JobRecord>>("QueryJobs", [&](pqxx::work& txn) {
    return ReadAll(txn.exec_prepared(postgres::kQueryJobs.name, query.state, query.kernel_name,
                                     query.owner, query.after_created_unix_ms,
                                     query.after_id, query.limit, query.sweep_id),
                   &ReadJob);
  });
}

// One statement per trial, all in one transaction: the batch pays for one
// commit. (libpqxx 6 has no array parameters, and its pipeline no prepared
// statements, so a multi-row statement would mean escaping values by hand.)
absl::StatusOr<std::vector<bool>> PostgresStore::InsertTrials(
    const std::vector<TrialRecord>& trials) {
  if (trials.empty()) return std::vector<bool>();
  for (const TrialRecord& trial : trials) {
    RETURN_IF_ERROR(CheckText({trial.job_id, trial.tuning_key, trial.config,
                               trial.worker_id, trial.device_id, trial.principal}));
  }
  // Batches of one job are serialized by an advisory lock per job, taken in
  // job order: two batches that share keys would otherwise lock them in
  // their own orders and could deadlock. Rows then go in batch order, which
  // ListTrials keeps.
  std::set<std::string> jobs;
  for (const TrialRecord& trial : trials) jobs.insert(trial.job_id);
  std::vector<size_t> order(trials.size());
  std::iota(order.begin(), order.end(), size_t{0});
  return Write<std::vector<bool>>("InsertTrials", [&](pqxx::work& txn) {
    for (const std::string& job : jobs) {
      txn.exec_params("SELECT pg_advisory_xact_lock($1, hashtext($2))", kTrialLockClass, job);
    }
    std::vector<bool> inserted(trials.size());
    for (size_t first = 0; first < order.size(); first += kTrialsPerStatement) {
      const size_t count = std::min(kTrialsPerStatement, order.size() - first);
      InsertTrialRows(txn, trials, absl::MakeConstSpan(order).subspan(first, count), &inserted);
    }
    return inserted;
  });
}

absl::StatusOr<std::vector<TrialRecord>> PostgresStore::ListTrials(
    const std::string& job_id) {
  RETURN_IF_ERROR(CheckText({job_id}));
  return Transact<std::vector<TrialRecord>>("ListTrials", [&](pqxx::work& txn) {
    return ReadAll(txn.exec_prepared(postgres::kListTrials.name, job_id), &ReadTrial);
  });
}

absl::StatusOr<TrialPage> PostgresStore::QueryTrials(const TrialQuery& query) {
  RETURN_IF_ERROR(CheckText({query.job_id}));
  return Transact<TrialPage>("QueryTrials", [&](pqxx::work& txn) {
    pqxx::result result = txn.exec_prepared(postgres::kQueryTrials.name, query.job_id, query.status,
                                            query.after_seq, int64_t{query.limit} + 1);
    TrialPage page;
    for (const pqxx::row& row : result) {
      if (static_cast<int>(page.trials.size()) == query.limit) {
        page.next_seq = result[query.limit - 1][TF_TRIAL_COUNT + 1].as<int64_t>();
        break;
      }
      page.trials.push_back(ReadTrial(row));
    }
    return page;
  });
}

absl::StatusOr<std::vector<TrialRecord>> PostgresStore::ListKeyTrials(
    const std::string& tuning_key) {
  RETURN_IF_ERROR(CheckText({tuning_key}));
  return Transact<std::vector<TrialRecord>>("ListKeyTrials", [&](pqxx::work& txn) {
    return ReadAll(txn.exec_prepared(postgres::kListKeyTrials.name, tuning_key), &ReadTrial);
  });
}

absl::StatusOr<std::vector<std::string>> PostgresStore::ListReplacingJobs(
    const std::string& tuning_key) {
  RETURN_IF_ERROR(CheckText({tuning_key}));
  return Transact<std::vector<std::string>>("ListReplacingJobs", [&](pqxx::work& txn) {
    return ReadAll(txn.exec_prepared(postgres::kListReplacingJobs.name, tuning_key), &ReadId);
  });
}

absl::StatusOr<Exclusion> PostgresStore::ExcludeTrials(const TrialFilter& filter) {
  RETURN_IF_ERROR(CheckFilter(filter));
  RETURN_IF_ERROR(CheckText({filter.worker, filter.tuning_key, filter.job_id}));
  return Write<Exclusion>("ExcludeTrials", [&](pqxx::work& txn) {
    pqxx::result result = txn.exec_prepared(postgres::kExcludeTrials.name, filter.worker,
                                            filter.tuning_key, filter.job_id);
    std::set<std::string> keys;
    std::set<std::string> principals;
    for (const pqxx::row& row : result) {
      keys.insert(row[0].as<std::string>());
      if (std::string principal = row[1].as<std::string>(); !principal.empty()) {
        principals.insert(std::move(principal));
      }
    }
    return Exclusion{static_cast<int64_t>(result.size()),
                     std::vector<std::string>(keys.begin(), keys.end()),
                     std::vector<std::string>(principals.begin(), principals.end())};
  });
}

absl::Status PostgresStore::PutBest(const BestRecord& best) {
  RETURN_IF_ERROR(
      CheckText({best.tuning_key, best.kernel_name, best.shape,
                 best.device_model, best.toolkit, best.config, best.job_id}));
  return Write<bool>("PutBest", [&](pqxx::work& txn) {
           txn.exec_prepared(postgres::kPutBest.name, best.tuning_key, best.kernel_name, best.shape,
                             best.device_model, best.toolkit, best.config,
                             best.median_seconds, best.job_id, best.updated_unix_ms,
                             best.imported, best.origin, Bytes(best.evidence));
           return true;
         })
      .status();
}

absl::StatusOr<bool> PostgresStore::DeleteBest(const std::string& tuning_key) {
  RETURN_IF_ERROR(CheckText({tuning_key}));
  return Write<bool>("DeleteBest", [&](pqxx::work& txn) {
    return txn.exec_prepared(postgres::kDeleteBest.name, tuning_key).affected_rows() > 0;
  });
}

absl::Status PostgresStore::PutQuarantine(const QuarantineRecord& record) {
  RETURN_IF_ERROR(CheckText({record.principal}));
  return Write<bool>("PutQuarantine", [&](pqxx::work& txn) {
           txn.exec_prepared(postgres::kPutQuarantine.name, record.principal, Bytes(record.reason),
                             record.since_unix_ms);
           return true;
         })
      .status();
}

absl::StatusOr<bool> PostgresStore::DeleteQuarantine(const std::string& principal) {
  RETURN_IF_ERROR(CheckText({principal}));
  return Write<bool>("DeleteQuarantine", [&](pqxx::work& txn) {
    return txn.exec_prepared(postgres::kDeleteQuarantine.name, principal).affected_rows() > 0;
  });
}

absl::StatusOr<std::vector<QuarantineRecord>> PostgresStore::ListQuarantine() {
  return Transact<std::vector<QuarantineRecord>>("ListQuarantine", [&](pqxx::work& txn) {
    return ReadAll(txn.exec_prepared(postgres::kListQuarantine.name), &ReadQuarantine);
  });
}

absl::StatusOr<bool> PostgresStore::UpsertBest(const BestRecord& best) {
  RETURN_IF_ERROR(
      CheckText({best.tuning_key, best.kernel_name, best.shape,
                 best.device_model, best.toolkit, best.config, best.job_id}));
  return Write<bool>("UpsertBest", [&](pqxx::work& txn) {
    pqxx::result result = txn.exec_prepared(
        postgres::kUpsertBest.name, best.tuning_key, best.kernel_name, best.shape,
        best.device_model, best.toolkit, best.config, best.median_seconds,
        best.job_id, best.updated_unix_ms, best.imported, best.origin, Bytes(best.evidence));
    return result.affected_rows() > 0;
  });
}

absl::StatusOr<bool> PostgresStore::ImportBest(const BestRecord& best, bool overwrite) {
  RETURN_IF_ERROR(CheckText({best.tuning_key, best.kernel_name, best.shape, best.device_model,
                             best.toolkit, best.config, best.job_id, best.origin}));
  return Write<bool>("ImportBest", [&](pqxx::work& txn) {
    pqxx::result result = txn.exec_prepared(
        postgres::kImportBest.name, best.tuning_key, best.kernel_name, best.shape,
        best.device_model, best.toolkit, best.config, best.median_seconds,
        best.job_id, best.updated_unix_ms, best.imported, best.origin, Bytes(best.evidence),
        overwrite);
    return result.affected_rows() > 0;
  });
}

absl::StatusOr<BestRecord> PostgresStore::GetBest(
    const std::string& tuning_key) {
  RETURN_IF_ERROR(CheckText({tuning_key}));
  ASSIGN_OR_RETURN(
      std::optional<BestRecord> best,
      Transact<std::optional<BestRecord>>("GetBest", [&](pqxx::work& txn) {
        return ReadOne(txn.exec_prepared(postgres::kGetBest.name, tuning_key), &ReadBest);
      }));
  if (!best.has_value()) {
    return absl::NotFoundError(absl::StrCat("no best for ", tuning_key));
  }
  return *std::move(best);
}

absl::StatusOr<std::vector<BestRecord>> PostgresStore::ListBest(
    const std::string& kernel_name, const std::string& device_model,
    const std::string& toolkit) {
  RETURN_IF_ERROR(CheckText({kernel_name, device_model, toolkit}));
  return Transact<std::vector<BestRecord>>("ListBest", [&](pqxx::work& txn) {
    return ReadAll(
        txn.exec_prepared(postgres::kListBest.name, kernel_name, device_model, toolkit),
        &ReadBest);
  });
}

absl::Status PostgresStore::PutBlobs(const std::vector<BlobRecord>& blobs) {
  if (blobs.empty()) return absl::OkStatus();
  for (const BlobRecord& blob : blobs)
    RETURN_IF_ERROR(CheckText({blob.digest}));
  return Write<bool>("PutBlobs",
                        [&](pqxx::work& txn) {
                          for (const BlobRecord& blob : blobs) {
                            txn.exec_prepared(postgres::kPutBlob.name, blob.digest,
                                              Bytes(blob.content));
                          }
                          return true;
                        })
      .status();
}

absl::StatusOr<std::string> PostgresStore::GetBlob(const std::string& digest) {
  RETURN_IF_ERROR(CheckText({digest}));
  ASSIGN_OR_RETURN(
      std::optional<std::string> content,
      Transact<std::optional<std::string>>("GetBlob", [&](pqxx::work& txn) {
        pqxx::result result = txn.exec_prepared(postgres::kGetBlob.name, digest);
        if (result.empty()) return std::optional<std::string>();
        return std::optional<std::string>(ReadBytes(result[0][0]));
      }));
  if (!content.has_value()) {
    return absl::NotFoundError(absl::StrCat("no blob ", digest));
  }
  return *std::move(content);
}

absl::Status PostgresStore::PutKernel(const KernelRecord& kernel) {
  RETURN_IF_ERROR(CheckText({kernel.name}));
  return Write<bool>("PutKernel",
                        [&](pqxx::work& txn) {
                          txn.exec_prepared(postgres::kPutKernel.name, kernel.name,
                                            Bytes(kernel.spec),
                                            kernel.updated_unix_ms);
                          return true;
                        })
      .status();
}

absl::StatusOr<std::vector<KernelRecord>> PostgresStore::ListKernels() {
  return Transact<std::vector<KernelRecord>>(
      "ListKernels", [&](pqxx::work& txn) {
        return ReadAll(txn.exec_prepared(postgres::kListKernels.name), &ReadKernel);
      });
}

absl::Status PostgresStore::PutToken(const TokenRecord& token) {
  RETURN_IF_ERROR(CheckText({token.id, token.name, token.role, token.secret_hash}));
  return Write<bool>("PutToken",
                        [&](pqxx::work& txn) {
                          txn.exec_prepared(postgres::kPutToken.name, token.id, token.name,
                                            token.role, token.secret_hash, token.created_unix_ms,
                                            token.revoked_unix_ms);
                          return true;
                        })
      .status();
}

absl::StatusOr<std::vector<TokenRecord>> PostgresStore::ListTokens() {
  return Transact<std::vector<TokenRecord>>("ListTokens", [&](pqxx::work& txn) {
    return ReadAll(txn.exec_prepared(postgres::kListTokens.name), &ReadToken);
  });
}

absl::Status PostgresStore::PutProfile(const ProfileRecord& profile) {
  RETURN_IF_ERROR(CheckText({profile.job_id, profile.tuning_key, profile.config}));
  return Write<bool>("PutProfile",
                        [&](pqxx::work& txn) {
                          txn.exec_prepared(postgres::kPutProfile.name, profile.job_id,
                                            profile.tuning_key, profile.config,
                                            Bytes(profile.profile),
                                            profile.profiled_unix_ms);
                          txn.exec_prepared(postgres::kDeleteProfileRequest.name, profile.job_id,
                                            profile.tuning_key, profile.config);
                          return true;
                        })
      .status();
}

absl::StatusOr<std::vector<ProfileRecord>> PostgresStore::ListProfiles(
    const std::string& job_id) {
  return Transact<std::vector<ProfileRecord>>("ListProfiles", [&](pqxx::work& txn) {
    return ReadAll(txn.exec_prepared(postgres::kListProfiles.name, job_id), &ReadProfile);
  });
}

absl::Status PostgresStore::PutProfileRequests(
    const std::vector<ProfileRequestRecord>& requests) {
  if (requests.empty()) return absl::OkStatus();
  for (const ProfileRequestRecord& request : requests) {
    RETURN_IF_ERROR(CheckText({request.job_id, request.tuning_key, request.device_model,
                               request.toolkit, request.config}));
  }
  return Write<bool>("PutProfileRequests",
                        [&](pqxx::work& txn) {
                          for (const ProfileRequestRecord& request : requests) {
                            txn.exec_prepared(postgres::kPutProfileRequest.name, request.job_id,
                                              request.tuning_key, request.device_model,
                                              request.toolkit, request.config, request.rank,
                                              request.median_seconds,
                                              request.requested_unix_ms);
                          }
                          return true;
                        })
      .status();
}

absl::StatusOr<std::vector<ProfileRequestRecord>> PostgresStore::ListProfileRequests() {
  return Transact<std::vector<ProfileRequestRecord>>("ListProfileRequests", [&](pqxx::work& txn) {
    return ReadAll(txn.exec_prepared(postgres::kListProfileRequests.name), &ReadProfileRequest);
  });
}

absl::StatusOr<std::string> PostgresStore::Secret(const std::string& name,
                                                  const std::string& fresh) {
  if (fresh.empty()) return absl::InvalidArgumentError("a secret is not empty");
  RETURN_IF_ERROR(CheckText({name}));
  return Write<std::string>("Secret", [&](pqxx::work& txn) {
    txn.exec_prepared(postgres::kPutSecret.name, name, Bytes(fresh), schema::NowUnixMs());
    return ReadBytes(txn.exec_prepared(postgres::kGetSecret.name, name)[0][0]);
  });
}

absl::Status PostgresStore::CheckHealth() {
  return Transact<bool>("CheckHealth",
                        [](pqxx::work& txn) {
                          txn.exec1("SELECT 1");
                          return true;
                        })
      .status();
}

}  // namespace tunefleet::server
