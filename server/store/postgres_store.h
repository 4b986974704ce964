// PostgresStore: the Store kept in PostgreSQL (the fleet-wide store).
#ifndef TUNEFLEET_SERVER_STORE_POSTGRES_STORE_H_
#define TUNEFLEET_SERVER_STORE_POSTGRES_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/store/leadership.h"
#include "server/store/store.h"

namespace tunefleet::server {

// A Store in a PostgreSQL database, reached through a small pool of libpqxx
// connections that each carry every prepared statement.
//
// Thread-safety: safe for concurrent use; each call borrows its own
// connection and runs in its own transaction. Several coordinators may share
// one database: migrations run under an advisory lock, so one applies them
// while the others wait.
//
// Failures: a call whose connection breaks is retried once on a fresh
// connection, and one that hits a serialization failure or deadlock is
// retried once; a commit whose outcome is unknown (in doubt) is never
// retried. Unavailable when the server cannot be reached, Aborted when the
// conflict persists, InvalidArgument when a text field holds a NUL byte or
// invalid UTF-8, Internal otherwise (an in-doubt commit included). No
// libpqxx exception escapes. CheckHealth runs `SELECT 1` under the same
// policy: OK when a connection answers, Unavailable when none can be made.
class PostgresStore : public Store {
 public:
  struct Options {
    // Most connections open at once; further callers wait. Default 8.
    int max_connections = 8;
    // How long a caller waits for a free connection before Unavailable.
    // Default 30 seconds.
    absl::Duration acquire_timeout = absl::Seconds(30);
    // When set, every write transaction first checks that the fence's
    // epoch is the database's leader epoch (coordinator_leader, locked FOR
    // SHARE) and is refused with FailedPrecondition otherwise
    // (leadership.h). Default none: writes are not fenced.
    std::shared_ptr<const LeaderFence> fence;
  };

  // Connects to `conninfo` (a libpq URI or key=value string) and applies
  // pending migrations. Unavailable when the server cannot be reached. Put
  // connect_timeout in `conninfo` to bound the wait for an unreachable host
  // (libpq waits as long as the operating system does otherwise).
  static absl::StatusOr<std::unique_ptr<PostgresStore>> Open(
      const std::string& conninfo, const Options& options);
  static absl::StatusOr<std::unique_ptr<PostgresStore>> Open(
      const std::string& conninfo) {
    return Open(conninfo, Options());
  }

  ~PostgresStore() override;

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
  class Connection;  // one pqxx::connection with the statements prepared
  class Lease;       // a borrowed Connection, returned when it goes away

  PostgresStore(std::string conninfo, const Options& options);
  // Applies pending migrations under a transaction-scoped advisory lock.
  absl::Status Migrate();

  // Borrows an idle connection, or opens one while under max_connections.
  absl::StatusOr<Lease> Acquire();
  // Takes back a borrowed connection; a null or broken one frees its slot.
  void Release(std::unique_ptr<Connection> connection);
  // Closes every idle connection (after the server dropped one).
  void DropIdleConnections() ABSL_LOCKS_EXCLUDED(mu_);
  bool CanAcquire() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Runs `body(pqxx::work&)` in one transaction on a borrowed connection,
  // applying the retry policy above; converts every exception to a status.
  template <typename T, typename Body>
  absl::StatusOr<T> Transact(absl::string_view what, Body body);
  // Transact for a transaction that writes: fenced (Options::fence).
  template <typename T, typename Body>
  absl::StatusOr<T> Write(absl::string_view what, Body body);

  const std::string conninfo_;
  const Options options_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // idle plus borrowed
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_STORE_POSTGRES_STORE_H_
