// The JobManager: every tuning job from submission to its final state. It
// validates jobs, binds them to the device models of live workers, answers
// from the store when a key is already tuned, hands out leases of trials,
// records results exactly once per config, and keeps the best configs.
#ifndef TUNEFLEET_SERVER_JOB_MANAGER_H_
#define TUNEFLEET_SERVER_JOB_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/metrics.h"
#include "server/store/store.h"
#include "server/target_trials.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/tuning_service.pb.h"
#include "tunefleet/v1/worker_service.pb.h"

namespace tunefleet::server {

// True for SUCCEEDED, FAILED and CANCELLED: the job will not change again.
bool IsFinal(v1::JobState state);

struct JobManagerOptions {
  // A lease not renewed (ReportResults, Heartbeat) for this long expires and
  // its unfinished trials go back to the queue. Default 10 s.
  absl::Duration lease_ttl = absl::Seconds(10);
  // Trials per lease when the worker asks for 0. Default 4.
  int batch_size = 4;
  // Largest full (cartesian) space accepted. Default 10,000,000 points.
  int64_t max_space_points = 10'000'000;
  // Largest number of configs one job target measures. Default 100,000.
  int64_t max_trials = 100'000;
  // Leases a config may lose before it is recorded WORKER_LOST. Default 3.
  int max_lease_attempts = 3;
  // Longest LeaseWork long-poll. Default 30 s.
  absl::Duration max_long_poll = absl::Seconds(30);
  // Configs re-measured in the finalists round of each target; 0 or 1
  // turns the round off. Default 5.
  int finalists = 5;
  // Largest total size of a job's source files. Default 4 MiB.
  int64_t max_source_bytes = 4 << 20;
};

// Thread-safety: safe for concurrent use; every public method may block on
// the store. LeaseWork and WaitForChange block up to their timeouts.
class JobManager {
 public:
  using Clock = std::function<absl::Time()>;
  // `metrics` may be null (nothing is counted); it must outlive the manager.
  JobManager(const JobManagerOptions& options, Store* store,
             WorkerRegistry* workers, Clock clock,
             CoordinatorMetrics* metrics = nullptr);
  ~JobManager();

  // Reloads unfinished jobs and their stored trials (call once at start-up).
  absl::Status Recover();

  // InvalidArgument for a bad spec, shape or strategy (the message names the
  // field), ResourceExhausted for a space over the caps.
  absl::StatusOr<v1::Job> Submit(const v1::JobSpec& spec);
  absl::StatusOr<v1::Job> Get(const std::string& job_id);
  absl::StatusOr<v1::Job> Cancel(const std::string& job_id);
  // Newest first.
  std::vector<v1::Job> List(int limit);
  // Returns the job once its version differs from `*version` (at once for
  // *version < 0) or when `timeout` passes; updates `*version`.
  absl::StatusOr<v1::Job> WaitForChange(const std::string& job_id,
                                        int64_t* version,
                                        absl::Duration timeout);

  // Binds waiting jobs to the device models now live.
  void OnWorkerRegistered();
  // Long-polls up to min(wait, max_long_poll) for trials the worker's device
  // can run; no lease (nullopt) when none came.
  absl::StatusOr<std::optional<v1::Lease>> LeaseWork(
      const v1::LeaseWorkRequest& request);
  absl::StatusOr<v1::ReportResultsResponse> ReportResults(
      const v1::ReportResultsRequest& request);
  // Renews every lease of the worker.
  void RenewLeases(const std::string& worker_id);
  // Expires overdue leases and finishes jobs whose last step failed (a store
  // write); the composition root calls it periodically.
  void Tick();
  // Ends every long-poll at once and refuses new ones (coordinator shutdown).
  void Shutdown();

  absl::StatusOr<std::string> GetBlob(const std::string& digest);
  // The newest submitted spec and sources of a kernel; NotFound if none.
  absl::StatusOr<v1::JobSpec> LatestSpec(const std::string& kernel_name);

 private:
  struct Target {
    v1::Target info;
    std::unique_ptr<TargetTrials> trials;  // null when cached
    bool finished = false;
  };
  struct Job {
    v1::JobSpec spec;  // shape normalized; sources with their content
    v1::Job view;      // id, state, reason, times
    std::vector<Target> targets;
    int64_t version = 0;
  };
  struct Lease {
    std::string id;
    std::string worker_id;
    std::string job_id;
    int target = 0;
    int64_t epoch = 0;
    absl::Time expires;
    std::vector<uint64_t> ordinals;  // not yet reported
    bool finalists = false;          // the finalists round: trials already stored
  };

  // Checks a job before any device is known; needs no lock.
  absl::Status ValidateSpec(v1::JobSpec* spec) const;
  // Adds a target for every live model the job has none for. A model whose
  // target cannot be made (no valid config under its limits, a store error)
  // is left unbound and tried again at the next registration; returns the
  // first such error when the job still has no target at all.
  absl::Status BindTargets(Job* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A target measured on `device`'s model, or answered from the store when
  // `allow_cached` and the key is tuned.
  absl::StatusOr<Target> MakeTarget(const Job& job, const WorkerDevice& device,
                                    bool allow_cached)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<v1::Lease> TryLease(const WorkerDevice& device, int max)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RecordResult(Job* job, int target, uint64_t ordinal,
                            const Lease& lease, const v1::TrialResult& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseLease(Lease* lease, bool expired) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ExpireLeases() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFinish(Job* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  BestRecord BestFor(const Job& job, const Target& target, const TrialOutcome& best) const;
  TrialRecord TrialRow(const Job& job, const Target& target, const std::string& worker_id,
                       const v1::TrialResult& result) const;
  void SetState(Job* job, v1::JobState state, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Changed(Job* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Persist(const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Job View(const Job& job) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status RestoreJob(const JobRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobManagerOptions options_;
  Store* const store_;
  WorkerRegistry* const workers_;
  const Clock clock_;
  NullMetrics null_metrics_;
  CoordinatorMetrics* const metrics_;

  absl::Mutex mu_;
  absl::CondVar work_cv_;     // new trials may be available
  absl::CondVar changed_cv_;  // some job changed
  std::map<std::string, std::unique_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> job_order_ ABSL_GUARDED_BY(mu_);  // submission order
  absl::flat_hash_map<std::string, Lease> leases_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> blobs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, v1::JobSpec> latest_spec_ ABSL_GUARDED_BY(mu_);
  int64_t next_epoch_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Jobs that are done but whose best config the store refused; Tick retries.
  absl::flat_hash_set<std::string> unstored_best_ ABSL_GUARDED_BY(mu_);
  int64_t next_lease_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_JOB_MANAGER_H_
