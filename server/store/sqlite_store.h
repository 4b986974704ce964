// SqliteStore: the Store kept in one SQLite file (the embedded default).
#ifndef TUNEFLEET_SERVER_STORE_SQLITE_STORE_H_
#define TUNEFLEET_SERVER_STORE_SQLITE_STORE_H_

#include <array>
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
  absl::StatusOr<bool> InsertTrial(const TrialRecord& trial) override;
  absl::StatusOr<std::vector<TrialRecord>> ListTrials(
      const std::string& job_id) override;
  absl::StatusOr<bool> UpsertBest(const BestRecord& best) override;
  absl::StatusOr<BestRecord> GetBest(const std::string& tuning_key) override;
  absl::StatusOr<std::vector<BestRecord>> ListBest(
      const std::string& kernel_name, const std::string& device_model,
      const std::string& toolkit) override;

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

  explicit SqliteStore(Db db);
  // Sets the pragmas, applies pending migrations, prepares every query.
  absl::Status Initialize(const Options& options);

  absl::Mutex mu_;
  // Declared before the statements: they are finalized before it closes.
  Db db_ ABSL_GUARDED_BY(mu_);
  std::array<Stmt, kNumQueries> statements_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_STORE_SQLITE_STORE_H_
