// SqliteStore: the Store kept in one SQLite file (the embedded default).
#ifndef TUNEFLEET_SERVER_STORE_SQLITE_STORE_H_
#define TUNEFLEET_SERVER_STORE_SQLITE_STORE_H_

#include <sys/types.h>

#include <array>
#include <functional>
#include <memory>
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
// It remembers the identity (device, inode) of its file and checks it before
// every call: once the file (or its directory) was deleted or replaced, every
// call answers Unavailable naming the file, for good, instead of writing
// into an unlinked file. A read-only file, a full disk and an I/O error are
// Unavailable too; CheckHealth reports the last such write failure until a
// write succeeds again.
//
// Thread-safety: safe for concurrent use; one connection is shared behind a
// mutex, so calls run one at a time. Other processes may open the same file:
// SQLite locks it, and a call waits up to `busy_timeout_ms` for their locks
// before failing with Unavailable.
class SqliteStore : public Store {
 public:
  struct Options {
    // How long a call waits for another connection's lock. Default 5000.
    int busy_timeout_ms = 5000;
  };

  // Opens (creating when missing) the database file at `path` and applies
  // pending migrations. REQUIRES: the parent directory of `path` exists.
  // Unavailable when the file cannot be opened.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path, const Options& options);
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path) {
    return Open(path, Options());
  }

  ~SqliteStore() override;

  absl::Status PutJob(const JobRecord& job) override;
  absl::StatusOr<JobRecord> GetJob(const std::string& id) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobs(bool unfinished_only,
                                                  int limit) override;
  absl::StatusOr<std::vector<bool>> InsertTrials(
      const std::vector<TrialRecord>& trials) override;
  absl::StatusOr<std::vector<TrialRecord>> ListTrials(
      const std::string& job_id) override;
  absl::StatusOr<bool> UpsertBest(const BestRecord& best) override;
  absl::StatusOr<BestRecord> GetBest(const std::string& tuning_key) override;
  absl::StatusOr<std::vector<BestRecord>> ListBest(
      const std::string& kernel_name, const std::string& device_model,
      const std::string& toolkit) override;
  absl::Status PutBlobs(const std::vector<BlobRecord>& blobs) override;
  absl::StatusOr<std::string> GetBlob(const std::string& digest) override;
  absl::Status PutKernel(const KernelRecord& kernel) override;
  absl::StatusOr<std::vector<KernelRecord>> ListKernels() override;
  absl::Status CheckHealth() override;

 private:
  // The prepared statements, one per query (indices into statements_).
  enum Query {
    kPutJob,
    kGetJob,
    kListJobs,
    kInsertTrial,
    kListTrials,
    kUpsertBest,
    kGetBest,
    kListBest,
    kPutBlob,
    kGetBlob,
    kPutKernel,
    kListKernels,
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

  SqliteStore(Db db, std::string path);
  // Sets the pragmas, applies pending migrations, prepares every query.
  absl::Status Initialize(const Options& options);
  // Unavailable once the file at path_ is not the one opened.
  absl::Status CheckFile() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body` in one write transaction (rolled back on error).
  absl::Status InTransaction(const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Remembers the outcome of a write for CheckHealth; returns it.
  absl::Status Noted(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  dev_t device_ ABSL_GUARDED_BY(mu_) = 0;
  ino_t inode_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status lost_ ABSL_GUARDED_BY(mu_);          // sticky
  absl::Status write_health_ ABSL_GUARDED_BY(mu_);  // the last write's
  // Declared before the statements: they are finalized before it closes.
  Db db_ ABSL_GUARDED_BY(mu_);
  std::array<Stmt, kNumQueries> statements_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_STORE_SQLITE_STORE_H_
