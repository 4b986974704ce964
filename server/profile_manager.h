// The ProfileManager: Nsight Compute profiles of a finished job's fastest
// configs (docs/profiling.md). A request queues, per job target that
// measured configs, its `top` fastest OK configs; a worker device of the
// target's model and toolkit takes them as one profile lease (LEASE_KIND_PROFILE),
// runs each once under ncu and reports a v1::KernelProfile per config, which
// is stored (Store::PutProfile). A profile never changes its job: a config
// whose counters cannot be read is stored with the reason.
//
// Nothing asked for is lost: a request's configs are written to the store
// (Store::PutProfileRequests) before Request answers, and a config's row
// goes when its profile is stored (Store::PutProfile, one transaction). A
// restarted coordinator queues the rows again (Recover); a lease open at the
// restart is simply pending again.
#ifndef TUNEFLEET_SERVER_PROFILE_MANAGER_H_
#define TUNEFLEET_SERVER_PROFILE_MANAGER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/lease.h"
#include "server/metrics.h"
#include "server/quarantine.h"
#include "server/store/store.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// Most configs one request profiles per target.
inline constexpr int kMaxProfileTop = 16;
// Most target requests pending at once (they wait for a worker of their
// model).
inline constexpr size_t kMaxPendingProfiles = 1024;

// Thread-safety: safe for concurrent use. One lock guards the pending
// requests and their leases; it is never held across a store call.
class ProfileManager final : public LeaseSource {
 public:
  using Clock = std::function<absl::Time()>;
  // A job as JobManager::Get answers it (NotFound for an unknown one).
  using JobLookup = std::function<absl::StatusOr<v1::Job>(const std::string& job_id)>;
  // Every pointer must outlive the manager; `quarantine` may be null (no
  // worker is refused), and `metrics` (nothing counted). A profile lease not
  // renewed (a report, a heartbeat) for `lease_ttl` goes back to the queue.
  ProfileManager(Store* store, JobLookup jobs, WorkerRegistry* workers, Clock clock,
                 absl::Duration lease_ttl, const QuarantineList* quarantine = nullptr,
                 CoordinatorMetrics* metrics = nullptr);
  ~ProfileManager();

  // Queues the stored profile requests (Store::ListProfileRequests) again,
  // unleased. Call once, before serving. Rows of a job the store no longer
  // has, or whose spec is unreadable, are skipped (and logged). Unavailable
  // when the store is.
  absl::Status Recover();

  // `listener` is called (without locks held) whenever a profile lease may
  // have become available. Call before serving.
  void SetWorkListener(std::function<void()> listener);

  // Queues the `top` fastest OK configs of each measured target of job
  // `job_id` and returns them (pending, rank order per target).
  // InvalidArgument unless 1 <= top <= kMaxProfileTop; NotFound for an
  // unknown job; FailedPrecondition for a job that has not SUCCEEDED, for
  // one with no measured config, and for one already being profiled;
  // ResourceExhausted with kMaxPendingProfiles pending; Unavailable when the
  // store is (nothing is queued then).
  absl::StatusOr<std::vector<v1::KernelProfile>> Request(const std::string& job_id, int top);
  // The stored profiles of `job_id` (rank order per target), then those
  // still pending. Empty for a job never profiled (known or not).
  absl::StatusOr<std::vector<v1::KernelProfile>> List(const std::string& job_id);

  // A profile lease for the worker's device when a request waits for its
  // model and toolkit; nullopt when none does (or for an unknown worker or
  // device, or a quarantined one: the JobManager answers those). Never an
  // error.
  absl::StatusOr<std::optional<LeaseGrant>> TryLease(const LeaseQuery& query) override;
  // True when `lease_id` names a profile lease ("profile-<N>", held or not).
  bool Grants(const std::string& lease_id) const override;
  // Stores the reported profiles (removing their request rows), then marks
  // their configs done; a request whose configs are all done ends. A report
  // of an expired or foreign lease is acknowledged as cancelled, storing
  // nothing. Unavailable when the store refused a row (the lease stays; the
  // worker may report again).
  absl::StatusOr<ReportAck> Report(const ResultReport& report) override;
  // OK when a profile lease `worker_id` holds carries a source with
  // `digest`; PermissionDenied otherwise.
  absl::Status CheckBlobLeased(const std::string& worker_id,
                               const std::string& digest) override;
  // OK when `worker_id` holds a profile lease of job `job_id` (whose
  // configs it compiles to profile them); PermissionDenied otherwise.
  absl::Status CheckArtifactLeased(const std::string& worker_id, const std::string& job_id,
                                   const v1::Config& config, bool reference) override;
  // Renews every profile lease of the worker.
  void RenewLeases(const std::string& worker_id) override;
  // Returns expired leases' configs to the queue.
  void Tick();

 private:
  struct Queued;
  // A reported profile, ready to store: config `ordinal` of its request.
  struct Row {
    uint64_t ordinal = 0;
    ProfileRecord record;
    bool read = false;  // its counters were read (it has no `unavailable` reason)
  };
  // The target's `top` fastest configs from `trials`, rank order.
  static std::vector<v1::KernelProfile> Fastest(const std::vector<TrialRecord>& trials,
                                                const v1::Target& target, int top);
  // A request per target of `job` that measured configs (none: empty), read
  // from the store without the lock.
  absl::StatusOr<std::vector<std::unique_ptr<Queued>>> Plan(const v1::Job& job, int top)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The store rows of `queued`, asked for at `now_unix_ms`.
  static std::vector<ProfileRequestRecord> RequestRows(
      const std::vector<std::unique_ptr<Queued>>& queued, int64_t now_unix_ms);
  // Holds a place for the requests of `job_id` (not yet leased, listed or
  // counted) unless it has some already.
  absl::StatusOr<std::vector<v1::KernelProfile>> Reserve(
      const std::string& job_id, std::vector<std::unique_ptr<Queued>> queued)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Queues the reserved requests of `job_id` once their rows are written
  // (`written`), or drops them.
  void Settle(const std::string& job_id, bool written) ABSL_LOCKS_EXCLUDED(mu_);
  // The requests the rows of one job describe (`rows` ordered as
  // ListProfileRequests orders them); empty when the job's spec cannot be read.
  absl::StatusOr<std::vector<std::unique_ptr<Queued>>> Rebuild(
      const std::vector<ProfileRequestRecord>& rows) ABSL_LOCKS_EXCLUDED(mu_);
  // Tells the metrics how many configs are pending.
  void PublishPending() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Queued* FindLease(const std::string& lease_id, int64_t epoch, const std::string& worker_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The row of `result`, reported for config `asked` of `request`.
  static v1::KernelProfile Stamped(const Queued& request, const v1::TrialResult& result,
                                   const v1::KernelProfile& asked, const std::string& worker_id,
                                   int64_t now_unix_ms);
  // The rows a report brings (renewing its lease); nullopt when the lease
  // is not held.
  std::optional<std::vector<Row>> RowsOf(const ResultReport& report) ABSL_LOCKS_EXCLUDED(mu_);
  // Marks stored `rows` done and answers the report.
  ReportAck MarkDone(const ResultReport& report, const std::vector<Row>& rows)
      ABSL_LOCKS_EXCLUDED(mu_);

  Store* const store_;
  const JobLookup jobs_;
  WorkerRegistry* const workers_;
  const Clock clock_;
  const absl::Duration lease_ttl_;
  const QuarantineList* const quarantine_;
  CoordinatorMetrics* const metrics_;
  std::function<void()> work_listener_;

  absl::Mutex mu_;
  std::vector<std::unique_ptr<Queued>> requests_ ABSL_GUARDED_BY(mu_);
  int64_t next_epoch_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_PROFILE_MANAGER_H_
