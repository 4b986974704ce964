// SqliteStore: the Store kept in one SQLite file (the embedded default).
#ifndef TUNEFLEET_SERVER_STORE_SQLITE_STORE_H_
#define TUNEFLEET_SERVER_STORE_SQLITE_STORE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/store/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tunefleet::server {

// A Store in a single SQLite database file, opened in WAL mode.
//
// Thread-safety: safe for concurrent use; one connection is shared behind a
// mutex, so calls run one at a time. Other processes may open the same file:
// SQLite locks it, and a call waits up to `busy_timeout_ms` for their locks
// before failing with Unavailable.
//
// The file: Open records the identity (device and inode) of the file at
// `path`, and every call first checks that `path` still names it. Once the
// file or its directory was deleted, or another file was put in its place,
// every call (CheckHealth included) answers Unavailable for good, before
// touching the database: a new file at the path is another database, and a
// write to the old one would be lost. Closing such a store removes the -wal
// and -shm files at the path when they are still its own (after copying the
// WAL into its own file), so they cannot be replayed into a new database,
// and leaves them alone otherwise.
//
// Failures: Unavailable, naming the condition, when the file cannot be
// written (read-only, disk full, an I/O error), cannot be opened, or stays
// locked by another connection; Internal for anything else SQLite reports.
// CheckHealth answers the last write's Unavailable failure until a write
// succeeds again.
class SqliteStore : public Store {
 public:
  struct Options {
    // How long a call waits for another connection's lock. Default 5000.
    int busy_timeout_ms = 5000;
  };

  // Opens (creating when missing) the database file at `path` and applies
  // pending migrations. REQUIRES: the parent directory of `path` exists.
  // Unavailable when the file cannot be opened for reading and writing.
  //
  // An in-memory database (IsInMemory: ":memory:", or an SQLite URI
  // filename with mode=memory, e.g. "file:name?mode=memory&cache=shared",
  // which every connection of the process that names it shares while one
  // is open) behaves the same except that it is not durable: no WAL and
  // no file to watch. For unit tests and throwaway coordinators.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path, const Options& options);
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path) {
    return Open(path, Options());
  }

  ~SqliteStore() override;

  // True for ":memory:" and SQLite URI filenames ("file:...") that ask for
  // mode=memory.
  static bool IsInMemory(const std::string& path);

  absl::Status PutJob(const JobRecord& job) override;
  absl::StatusOr<JobRecord> GetJob(const std::string& id) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobs(bool unfinished_only,
                                                  int limit) override;
  absl::StatusOr<std::vector<JobRecord>> QueryJobs(const JobQuery& query) override;
  absl::StatusOr<std::vector<bool>> InsertTrials(
      const std::vector<TrialRecord>& trials) override;
  absl::StatusOr<std::vector<TrialRecord>> ListTrials(
      const std::string& job_id) override;
  absl::StatusOr<TrialPage> QueryTrials(const TrialQuery& query) override;
  absl::StatusOr<std::vector<TrialRecord>> ListKeyTrials(
      const std::string& tuning_key) override;
  absl::StatusOr<std::vector<std::string>> ListReplacingJobs(
      const std::string& tuning_key) override;
  absl::StatusOr<Exclusion> ExcludeTrials(const TrialFilter& filter) override;
  absl::StatusOr<bool> UpsertBest(const BestRecord& best) override;
  absl::Status PutBest(const BestRecord& best) override;
  absl::StatusOr<bool> ImportBest(const BestRecord& best, bool overwrite) override;
  absl::StatusOr<bool> DeleteBest(const std::string& tuning_key) override;
  absl::Status PutQuarantine(const QuarantineRecord& record) override;
  absl::StatusOr<bool> DeleteQuarantine(const std::string& principal) override;
  absl::StatusOr<std::vector<QuarantineRecord>> ListQuarantine() override;
  absl::StatusOr<BestRecord> GetBest(const std::string& tuning_key) override;
  absl::StatusOr<std::vector<BestRecord>> ListBest(
      const std::string& kernel_name, const std::string& device_model,
      const std::string& toolkit) override;
  absl::Status PutBlobs(const std::vector<BlobRecord>& blobs) override;
  absl::StatusOr<std::string> GetBlob(const std::string& digest) override;
  absl::Status PutKernel(const KernelRecord& kernel) override;
  absl::StatusOr<std::vector<KernelRecord>> ListKernels() override;
  absl::Status PutToken(const TokenRecord& token) override;
  absl::StatusOr<std::vector<TokenRecord>> ListTokens() override;
  absl::Status PutProfile(const ProfileRecord& profile) override;
  absl::StatusOr<std::vector<ProfileRecord>> ListProfiles(const std::string& job_id) override;
  absl::Status PutProfileRequests(const std::vector<ProfileRequestRecord>& requests) override;
  absl::StatusOr<std::vector<ProfileRequestRecord>> ListProfileRequests() override;
  absl::StatusOr<std::string> Secret(const std::string& name, const std::string& fresh) override;
  absl::Status CheckHealth() override;

 private:
  // The prepared statements, one per query (indices into statements_).
  enum Query {
    kPutJob,
    kGetJob,
    kListJobs,
    kQueryJobs,
    kInsertTrial,
    kListTrials,
    kQueryTrials,
    kListKeyTrials,
    kListReplacingJobs,
    kExcludeTrials,
    kUpsertBest,
    kPutBest,
    kImportBest,
    kDeleteBest,
    kGetBest,
    kListBest,
    kPutBlob,
    kGetBlob,
    kPutKernel,
    kListKernels,
    kPutToken,
    kListTokens,
    kPutQuarantine,
    kDeleteQuarantine,
    kListQuarantine,
    kPutProfile,
    kListProfiles,
    kPutProfileRequest,
    kListProfileRequests,
    kDeleteProfileRequest,
    kPutSecret,
    kGetSecret,
    kNumQueries,
  };

  struct DbCloser {
    void operator()(sqlite3* db) const;
  };
  struct StmtFinalizer {
    void operator()(sqlite3_stmt* stmt) const;
  };
  using Db = std::unique_ptr<sqlite3, DbCloser>;
  using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

  // What stat() tells apart: one file, whatever its path.
  struct FileId {
    uint64_t device = 0;
    uint64_t inode = 0;
    bool operator==(const FileId&) const = default;
  };

  // The file at `path`; nullopt when there is none (it, or a directory on
  // the way, is gone); Unavailable when stat() fails otherwise.
  static absl::StatusOr<std::optional<FileId>> IdentityOf(
      const std::string& path);

  // True when `path` still names the file `opened` identified.
  static bool IsOurs(const std::string& path,
                     const std::optional<FileId>& opened);

  // `file`: the opened file's identity; nullopt for an in-memory database.
  SqliteStore(Db db, std::string path, std::optional<FileId> file);
  // Sets the pragmas, applies pending migrations, prepares every query.
  absl::Status Initialize(const Options& options);

  // OK while `path_` still names the file opened (always, in memory); else
  // the sticky Unavailable status described above (or a non-sticky one when
  // stat() itself fails).
  absl::Status CheckFile() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body()` (returning absl::StatusOr<T>) in one write transaction
  // after CheckFile, and keeps its Unavailable failure for CheckHealth.
  template <typename T, typename Body>
  absl::StatusOr<T> Write(Body body) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const std::optional<FileId> file_;  // nullopt: in memory
  absl::Mutex mu_;
  // The -wal and -shm files' identities after Initialize.
  std::optional<FileId> wal_ ABSL_GUARDED_BY(mu_);
  std::optional<FileId> shm_ ABSL_GUARDED_BY(mu_);
  // Why the file is lost; OK until it is, then never again.
  absl::Status lost_ ABSL_GUARDED_BY(mu_);
  // The last write's Unavailable failure; OK once a write succeeds.
  absl::Status last_write_error_ ABSL_GUARDED_BY(mu_);
  // Declared before the statements: they are finalized before it closes.
  Db db_ ABSL_GUARDED_BY(mu_);
  std::array<Stmt, kNumQueries> statements_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_STORE_SQLITE_STORE_H_
