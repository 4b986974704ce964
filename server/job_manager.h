// The JobManager: the live tuning jobs, from submission to their final state.
// It admits jobs (Admission), binds them to the device models of live
// workers (TargetPlanner), hands out leases (LeaseBook) of their trials
// (TargetTrials; job_manager_leases.cc), records results, has a candidate
// best that needs it re-measured by another worker (Verification; a claimant
// that disagrees is quarantined; job_manager_trust.cc) and a sample of the
// search results too (SpotChecks), and finishes jobs by
// deriving their best configs (BestKeeper). Each job's own state is a
// TuningJob; the manager holds the lock, the job map, the leases, and the
// writes with their retries. Jobs, trials, sources and best configs are
// persisted through the JobRepository, the Store, SourceBlobs and the
// BestConfigIndex; a finished job leaves memory and is answered from the
// store.
#ifndef TUNEFLEET_SERVER_JOB_MANAGER_H_
#define TUNEFLEET_SERVER_JOB_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/admission.h"
#include "server/best_keeper.h"
#include "server/fleet_names.h"
#include "server/lease.h"
#include "server/job_repository.h"
#include "server/lease_book.h"
#include "server/lease_receipts.h"
#include "server/lock_combiner.h"
#include "server/metrics.h"
#include "server/quarantine.h"
#include "server/source_blobs.h"
#include "server/spot_checks.h"
#include "server/store/store.h"
#include "server/submit_quotas.h"
#include "server/target_planner.h"
#include "server/target_trials.h"
#include "server/trial_writer.h"
#include "server/tuning_job.h"
#include "server/verification.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

class BestConfigIndex;

struct JobManagerOptions {
  // A lease not renewed (a report, a heartbeat) for this long expires and
  // its unfinished trials go back to the queue. Default 10 s.
  absl::Duration lease_ttl = absl::Seconds(10);
  // A lease that reports nothing for this long is taken back (as lost) even
  // while its worker heartbeats: a worker cannot hold trials it does not
  // measure. Each report moves it on. Default 10 min (a trial's compile and
  // measurement take far less; the worker's own timeouts end it sooner).
  absl::Duration lease_idle_limit = absl::Minutes(10);
  // However it reports, a lease is taken back (as lost) this long after it
  // was granted: one result now and then cannot hold a batch for good.
  // Default 30 min (a batch of 64 configs of a few seconds each takes far
  // less).
  absl::Duration lease_max_age = absl::Minutes(30);
  // Trials per lease when the worker asks for 0. Default 4.
  int batch_size = 4;
  // Most trials one lease carries, whatever the worker asks. Default 64.
  int max_batch_size = 64;
  // Most leases one worker device holds at once; asking for more is
  // ResourceExhausted. Default 2 (a worker measures one lease per device at
  // a time; the second covers a report still on its way).
  int max_leases_per_device = 2;
  // While another principal asked for a target's work lately, one
  // principal's search leases hold at most this share of the target's open
  // configs (neither measured nor given up; at least one), however many
  // devices it registers: a certificate that leases and never reports holds
  // no more until its leases are taken back. 1 turns the bound off.
  // Default 0.5.
  double max_lease_share = 0.5;
  // Most configs of one target proposed ahead for compile-only workers and
  // not yet leased (TargetTrials::ProposeAhead). Default 32.
  int compile_ahead = 32;
  // The share of search (and spot-check) leases that build their configs
  // from the sources (own_build) instead of fetching shared artifacts, so
  // that a poisoned artifact is caught in the search round too. The
  // finalists round and verifications always do. Default 0.05.
  double audit_build_rate = 0.05;
  // When a job's best is re-measured by another worker before it is served.
  VerifyOptions verify;
  // Which search results are re-measured by another principal while the
  // search runs (server/spot_checks.h); none with verify.mode kOff.
  SpotCheckOptions spot;
  // Largest full (cartesian) space accepted. Default 10,000,000 points.
  int64_t max_space_points = 10'000'000;
  // Largest number of configs one job target measures. Default 100,000.
  int64_t max_trials = 100'000;
  // A target for which no live worker of its device model and toolkit asked
  // for work for this long is given up (TargetTrials::Abandon,
  // STOP_REASON_NO_WORKERS; its partial results are no best), so a worker
  // that registered models and left, or only heartbeats, cannot keep a job
  // running for good. Default 10 min.
  absl::Duration orphan_timeout = absl::Minutes(10);
  // Leases a config may lose before it is recorded WORKER_LOST. Default 3.
  int max_lease_attempts = 3;
  // Configs re-measured in the finalists round of each target; 0 or 1
  // turns the round off. Default 5.
  int finalists = 5;
  // Best configs of the nearest tuned shapes (same kernel; the same device
  // model and toolkit first) a new target measures right after the default.
  int warm_start = 8;
  // The model strategy's training rows from the fleet (fleet_history.h):
  // trials of at most this many tuned shapes of the same kernel and device
  // model, and at most this many rows in all. Default 8 shapes, 512 rows.
  FleetHistoryLimits history;
  // Largest total size of a job's source files. Default 4 MiB.
  int64_t max_source_bytes = 4 << 20;
  // Largest total size of a job's tensors under its default config (what a
  // worker allocates, before its copies). Default 16 GiB.
  int64_t max_tensor_bytes = int64_t{16} << 30;
  // A batch of trial rows is tried this many times, with backoff from
  // `write_backoff` doubling, before its reports are refused. Default 3,
  // 50 ms. Rows of reports that arrive together share one transaction.
  int write_attempts = 3;
  absl::Duration write_backoff = absl::Milliseconds(50);
  // What one principal may submit and measure.
  QuotaOptions quotas;
  // Seals every plain search lease with a receipt and adopts, from its
  // receipt, a lease another coordinator process of the database granted
  // (server/lease_receipts.h), so that results measured across a restart or
  // a takeover are kept. None: leases carry no receipt and die with the
  // process (their trials are measured again).
  std::shared_ptr<const LeaseReceipts> receipts;
};

// Thread-safety: safe for concurrent use. One lock guards the live jobs and
// leases; it is never held across a store call, so LeaseWork, Heartbeat and
// GetBestConfig never wait on the database. The hot paths (a lease, the two
// steps of a report) run their sections through a LockCombiner: under load
// the lock changes hands once per batch of sections, not once per call. Trial rows go through a
// TrialWriter (group commit). Writes happen before the state
// they record changes in memory: a write the store refused changes nothing.
class JobManager final : public LeaseSource {
 public:
  using Clock = std::function<absl::Time()>;
  // `metrics`, `index`, `quarantine` and `keeper` may be null (the manager
  // then keeps its own quarantine list and best keeper over `store` and
  // `index`); everything given must outlive the manager.
  JobManager(const JobManagerOptions& options, Store* store, WorkerRegistry* workers,
             SourceBlobs* blobs, Clock clock, CoordinatorMetrics* metrics = nullptr,
             BestConfigIndex* index = nullptr, QuarantineList* quarantine = nullptr,
             BestKeeper* keeper = nullptr);
  ~JobManager();

  // Reloads the unfinished jobs and their stored trials (once, at start-up).
  absl::Status Recover();
  // `listener` is called (without locks held) whenever trials may have
  // become available to lease. Call before serving.
  void SetWorkListener(std::function<void()> listener);

  // Submits a job owned by principal `owner` ("": anonymous). InvalidArgument
  // for a bad spec, shape or strategy (the message names the field),
  // ResourceExhausted over a cap or the owner's quota, Unavailable when the
  // store is. A device_model no live worker has is accepted (the job waits
  // for one) only when FleetNames knows it: NotFound, listing the known
  // models, otherwise.
  absl::StatusOr<v1::Job> Submit(const v1::JobSpec& spec, const std::string& owner = "");
  // From memory for a live job, else from the store. NotFound.
  absl::StatusOr<v1::Job> Get(const std::string& job_id);
  absl::StatusOr<v1::Job> Cancel(const std::string& job_id);
  // The jobs `query` selects, newest first, as last stored; a live job's
  // counts are current.
  absl::StatusOr<std::vector<v1::Job>> List(const JobQuery& query);
  // For watchers (JobWatches). A count of the changes to live jobs: a view
  // changed, or a job left memory (finished). Never blocks.
  int64_t changes() const { return changes_.load(std::memory_order_acquire); }
  // The live job's version (it grows with every change of its view), and its
  // view in `*view` unless null. NotFound when the job is not in memory:
  // finished, not yet resumed, or unknown (Get says which).
  absl::StatusOr<int64_t> LiveVersion(const std::string& job_id, v1::Job* view = nullptr);

  // Binds waiting jobs to the device models now live.
  void OnWorkerRegistered();
  // Leases trials the worker's device can run, without waiting; no lease
  // (nullopt) when there are none. NotFound for an unknown worker or device,
  // PermissionDenied for a quarantined worker, ResourceExhausted when the
  // device holds max_leases_per_device leases already. A candidate best
  // waiting for verification goes only to a device that may verify it.
  absl::StatusOr<std::optional<LeaseGrant>> TryLease(const LeaseQuery& query) override;
  // True for the ids of this manager's leases (LeaseBook's "l<N>").
  bool Grants(const std::string& lease_id) const override;
  // Configs to compile ahead (docs/architecture.md, "Compile once for the
  // fleet"): up to query.max_configs of running jobs' matching targets,
  // proposed now and leased later, each handed out here once (at most
  // compile_ahead per target wait). Empty when nothing matches. A config
  // proposed ahead is measured like any other; none is reported back.
  std::vector<CompileGrant> ProposeCompiles(const CompileQuery& query);
  // Stores the reported trials (one transaction) and then records them.
  // Unavailable when the store refused them after its retries: the lease is
  // then returned and its trials are queued again. PermissionDenied for a
  // quarantined worker (its lease is returned, its results dropped).
  // A report of a lease this process does not hold, with a receipt another
  // process of the database sealed (a restart, a takeover), is adopted: the
  // configs of the receipt still to be measured (and those whose results
  // came with it, from whatever lease holds them now) become a lease of the
  // reporting worker, which the ack names, and the report is applied to it.
  // PermissionDenied for a receipt that is forged, altered or another
  // principal's; InvalidArgument for bytes that are no receipt.
  absl::StatusOr<ReportAck> Report(const ResultReport& report) override;
  // OK when a lease `worker_id` holds now carries a source file with
  // `digest`; PermissionDenied otherwise.
  absl::Status CheckBlobLeased(const std::string& worker_id,
                               const std::string& digest) override;
  // OK when `worker_id` holds a lease of job `job_id` that carries
  // `config` (any lease of the job for the reference), or was handed the
  // config to compile (ProposeCompiles); PermissionDenied otherwise.
  absl::Status CheckArtifactLeased(const std::string& worker_id, const std::string& job_id,
                                   const v1::Config& config, bool reference) override;
  // Renews every lease of the worker from now on: notes when the worker was
  // heard, without the JobManager's lock, and Tick renews its leases from
  // then before it expires any (leases expire nowhere else), so that the
  // heartbeats of a thousand workers never queue behind leases and reports.
  void RenewLeases(const std::string& worker_id) override ABSL_LOCKS_EXCLUDED(heard_mu_);
  // Periodic upkeep (the composition root calls it every 200 ms): expires
  // overdue leases, retries writes the store refused, and repairs any job
  // left with nothing leased and nothing to lease.
  void Tick() ABSL_LOCKS_EXCLUDED(mu_, heard_mu_);

  // Jobs held in memory (unfinished, or finishing).
  size_t live_jobs();

 private:
  using Target = JobTarget;
  using Job = TuningJob;
  // The writes that end a job, prepared under the lock, done without it.
  struct Finish {
    std::string job_id;
    std::vector<BestRecord> best;
    JobSnapshot snapshot;  // final
    std::vector<double> speedups;
  };
  // A principal a verification caught.
  struct Quarantined {
    std::string principal;
    std::string reason;
  };
  // The WORKER_LOST rows of expired leases, and finishes, to write.
  struct Pending {
    std::vector<TrialRecord> rows;
    std::vector<Quarantined> quarantines;  // done before the finishes
    std::vector<Finish> finishes;
    std::vector<JobSnapshot> snapshots;
    bool work = false;  // trials became available
    // The lease granted, to seal into its receipt without the lock.
    std::optional<v1::LeaseReceiptBody> receipt;
    // The config space of the lease granted: its configs are built (ConfigAt)
    // without the lock.
    std::shared_ptr<const ConfigSpace> configs;
  };

  static AdmissionLimits LimitsOf(const JobManagerOptions& options);
  void StartJob(std::unique_ptr<Job> job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The configs one lease (or compile request) asking for `asked` gets: the
  // batch size for 0, capped by max_batch_size.
  int BatchFor(int asked) const;
  std::optional<LeaseGrant> LeaseFrom(Job* job, int target, Lease lease, int max,
                                      Pending* pending) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  LeaseGrant GrantOf(Job* job, const Lease& lease, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // TuningJob::ApplyTimeBudget now; Changed when it stopped a target.
  bool ApplyTimeBudget(Job* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A verification lease of `target`, when `verifier` may verify it.
  std::optional<LeaseGrant> VerifyFrom(Job* job, int target, Lease lease,
                                       const std::vector<LiveDevice>& live, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records verification results; quarantines the principals the outcome
  // overruled (Verification::Overruled); a dispute waits for a referee.
  void ApplyVerification(const std::vector<std::pair<uint64_t, v1::TrialResult>>& results,
                         const Lease& lease, Target* target, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives a disputed verification its referee's deadline, or ends it.
  void AwaitReferee(Target* target, const std::string& reason, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // True when the target's best may be stored: no verification is needed, or
  // it ended. May start one (then false).
  bool VerificationSettled(const Job& job, Target* target, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool StartVerification(const Job& job, Target* target) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Spot checks (server/spot_checks.h; job_manager_trust.cc). Claims the
  // search results of `lease` and queues a check of those sampled.
  void SampleSpotChecks(const std::vector<RecordedResult>& recorded, const Lease& lease,
                        Target* target, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Judges the checks (or referees' measurements) of a spot-check lease.
  void ApplySpotChecks(const Job& job, const std::vector<RecordedResult>& checked,
                       const Lease& lease, Target* target, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a re-measurement of `ordinal` by a principal not in `not_by`,
  // when one takes part now (AnyActivePrincipal); false otherwise.
  bool QueueCheck(Target* target, uint64_t ordinal, bool referee,
                  std::vector<std::string> not_by, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Acts on a spot check's verdict: a dispute goes to a referee (else it is
  // unsettled), an overruled principal is quarantined, a suspect's claims
  // are all re-measured.
  void Judge(const Job& job, Target* target, uint64_t ordinal,
             const SpotChecks::Verdict& verdict, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a check of every claim of `principal` in `target` not checked yet.
  void Remeasure(Target* target, const std::string& principal, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A principal about to be quarantined: its measurements leave every live
  // job's ranking, and what it measured is measured again by others.
  void ForgetPrincipal(const std::string& principal, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the checks no eligible device took in time (Tick).
  void DropStaleChecks(Pending* pending) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How long a lease may go without a report before it is taken back.
  absl::Duration IdleLimitOf(const Lease& lease) const;
  // Whether `principal` is quarantined, or overruled and about to be.
  bool Refused(const std::string& principal) ABSL_LOCKS_EXCLUDED(overruled_mu_);
  bool Overruled(const std::string& principal) const ABSL_LOCKS_EXCLUDED(overruled_mu_);
  // PermissionDenied (returning its lease) when the reporting worker is
  // quarantined.
  absl::Status RefuseQuarantined(const ResultReport& report) ABSL_LOCKS_EXCLUDED(mu_);
  // Report for a lease this process holds; cancelled, with `*unknown` set,
  // for one it does not hold (expired, ended, or another process's).
  absl::StatusOr<ReportAck> ReportHeld(const ResultReport& report, bool* unknown)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The report of a lease this process does not hold, moved to the lease
  // adopted from its receipt; nullopt when nothing of it is left to adopt.
  absl::StatusOr<std::optional<ResultReport>> Adopt(const ResultReport& report)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The body of `report`'s receipt when it opens under the key and names
  // `principal` (the reporting worker's); PermissionDenied (InvalidArgument
  // for bytes that are no receipt) otherwise, counted and logged at most
  // every 10 s.
  absl::StatusOr<v1::LeaseReceiptBody> OpenReceipt(const ResultReport& report,
                                                   const std::string& principal)
      ABSL_LOCKS_EXCLUDED(mu_, refused_mu_);
  // What the receipt of a plain search lease seals (none without receipts,
  // nor for other leases).
  std::optional<v1::LeaseReceiptBody> ReceiptOf(const Job& job, const Lease& lease) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Records `results` (normalized, held by `lease` when the report came),
  // then returns what is left of the lease when `release`.
  void ApplyReport(const std::vector<std::pair<uint64_t, v1::TrialResult>>& results,
                   bool release, Lease* lease, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReturnLease(const Lease& lease, bool expired, Pending* pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a principal not in `besides` takes part in `target`: it has a
  // live device of the target's model and toolkit, is not quarantined and
  // asked for work within kActiveWindowTtls lease TTLs (a worker that only
  // heartbeats does not). Every caller asks only this, for a check or a
  // lost config, so the walk (WorkerRegistry::AnyLiveDevice, over the
  // model's principals) stops at the first such principal and copies
  // nothing: most answers look at a principal or two, whatever the number
  // of devices. Lock order: mu_, then the registry's, then the quarantine
  // list's (both leaves).
  bool AnyActivePrincipal(const Target& target, const std::vector<std::string>& besides) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // `principal` and AnyActivePrincipal(target, ...), for the loss rule
  // (TargetTrials::Take, Release).
  Holder HolderOf(const Target& target, const std::string& principal) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // How many of target `t`'s search configs `principal` may take now, `max`
  // at most: less where taking `max` would put it over max_lease_share of
  // the target's open configs while another principal (not quarantined)
  // asked for this target's work within the active window
  // (JobTarget::wanted_by, read only then).
  int ShareAllows(const Job& job, int t, const std::string& principal, int max) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void MaybeFinish(Job* job, Pending* pending) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RepairStranded(Pending* pending) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives up the targets no live worker could take for orphan_timeout.
  void AbandonOrphans(Pending* pending) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets (or clears) the reason of each unfinished job that has work no
  // live worker can take.
  void ExplainStalls() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Trials left to hand out, summed per target device model.
  std::vector<std::pair<std::string, int64_t>> QueuedByModel() const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Whether a live worker has a device of `target`'s model and toolkit.
  bool HasLiveWorker(const v1::StoredTarget& target) const;
  // Does the writes of `pending` without the lock, then applies them.
  void Flush(Pending pending) ABSL_LOCKS_EXCLUDED(mu_);
  void CompleteFinish(const Finish& finish, bool stored) ABSL_LOCKS_EXCLUDED(mu_);
  // Stores the quarantine, excludes the principal's trials and derives the
  // bests they touched again. When the store refuses, Tick tries again (the
  // verifier's rows decide the job's own best either way).
  void Quarantine(const Quarantined& quarantined) ABSL_LOCKS_EXCLUDED(mu_);
  void SetState(Job* job, v1::JobState state, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Changed(Job* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Job* FindJob(const std::string& id) ABSL_SHARED_LOCKS_REQUIRED(mu_);
  int ActiveJobsOf(const std::string& owner) ABSL_LOCKS_EXCLUDED(mu_);
  void Evict(Job* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Resume(const JobSnapshot& snapshot);

  const JobManagerOptions options_;
  Store* const store_;
  WorkerRegistry* const workers_;
  const Clock clock_;
  NullMetrics null_metrics_;
  CoordinatorMetrics* const metrics_;
  BestConfigIndex* const index_;
  const FleetNames names_;
  const TargetPlanner planner_;
  std::unique_ptr<QuarantineList> own_quarantine_;
  QuarantineList* const quarantine_;
  std::unique_ptr<BestKeeper> own_keeper_;
  BestKeeper* const keeper_;
  SourceBlobs* const blobs_;
  JobRepository repository_;
  TrialWriter writer_;
  SubmitQuotas quotas_;
  std::function<void()> work_listener_;

  absl::Mutex mu_;
  // Runs the hot paths' sections under mu_ in batches.
  LockCombiner combiner_{&mu_};
  std::atomic<int64_t> changes_{0};  // see changes()
  // Live jobs by submission sequence (leases go to the oldest first).
  std::map<int64_t, std::unique_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int64_t> sequence_of_ ABSL_GUARDED_BY(mu_);
  int64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  LeaseBook leases_ ABSL_GUARDED_BY(mu_);
  // Jobs whose final writes the store refused; Tick tries again.
  absl::flat_hash_set<std::string> unfinished_writes_ ABSL_GUARDED_BY(mu_);
  // WORKER_LOST rows the store refused; Tick tries again.
  std::vector<TrialRecord> unstored_rows_ ABSL_GUARDED_BY(mu_);
  // Quarantines the store refused; Tick tries again.
  std::vector<Quarantined> unstored_quarantines_ ABSL_GUARDED_BY(mu_);
  // When each principal last asked for work (TryLease).
  absl::flat_hash_map<std::string, absl::Time> asked_ ABSL_GUARDED_BY(mu_);
  // Principals overruled and not yet stored as quarantined (Quarantine):
  // refused as the quarantined are, meanwhile. A leaf lock, after mu_: a
  // lease or a report asks without taking mu_.
  mutable absl::Mutex overruled_mu_;
  absl::flat_hash_set<std::string> overruled_ ABSL_GUARDED_BY(overruled_mu_);
  // Leases adopted from receipts, by the granting process's (incarnation,
  // epoch): a report retried after its adoption goes to the same lease.
  // Dropped once past lease_max_age (Tick).
  struct Adopted {
    std::string lease_id;
    int64_t epoch = 0;
    absl::Time issued;
  };
  absl::flat_hash_map<std::pair<uint64_t, int64_t>, Adopted> adopted_ ABSL_GUARDED_BY(mu_);
  // Samples the spot checks and the audit builds: an insider cannot tell
  // which of its results are checked, nor which leases build from sources.
  std::mt19937_64 sampler_ ABSL_GUARDED_BY(mu_){std::random_device{}()};
  static constexpr int kActiveWindowTtls = 10;

  // When a refused receipt was last logged, and those refused since.
  absl::Mutex refused_mu_;
  absl::Time refused_logged_ ABSL_GUARDED_BY(refused_mu_) = absl::InfinitePast();
  int64_t refused_suppressed_ ABSL_GUARDED_BY(refused_mu_) = 0;

  // When each worker last heartbeat, since the last Tick (RenewLeases).
  // Taken alone, never with mu_.
  absl::Mutex heard_mu_;
  absl::flat_hash_map<std::string, absl::Time> heard_ ABSL_GUARDED_BY(heard_mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_JOB_MANAGER_H_
