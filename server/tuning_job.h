// TuningJob: one job as the coordinator holds it while it runs — its spec,
// the view clients see, and one JobTarget per (device model, toolkit) it is
// bound to — and what can be said of it alone: its view and snapshot, its
// rows, its time budget. Single-threaded: JobManager's lock guards every
// job, and JobManager does the leasing, recording, verification and writes.
#ifndef TUNEFLEET_SERVER_TUNING_JOB_H_
#define TUNEFLEET_SERVER_TUNING_JOB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/best_derivation.h"
#include "server/job_repository.h"
#include "server/lease_book.h"
#include "server/spot_checks.h"
#include "server/store/store.h"
#include "server/target_trials.h"
#include "server/verification.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// A result JobTarget::Record took from a search lease (with whether it was
// the target's fastest when it came) or a spot-check lease. `result` points
// into the results given to Record: valid while they are.
struct RecordedResult {
  uint64_t ordinal = 0;
  const v1::TrialResult* result = nullptr;
  bool new_best = false;
};

// One (device model, toolkit) of a job: its search, or its cached best.
struct JobTarget {
  v1::StoredTarget info;
  std::unique_ptr<TargetTrials> trials;  // null when cached
  // Who measured each config OK (search and finalists rounds).
  absl::flat_hash_map<uint64_t, std::vector<Measurer>> measured_by;
  bool verify_decided = false;  // whether the candidate needs verifying was decided
  bool served_unverified = false;
  std::unique_ptr<Verification> verification;  // when it does
  SpotChecks spot_checks;  // of the search round's results
  // The configs handed to each compile-only worker (ProposeCompiles): its
  // artifacts of them are accepted (JobManager::CheckArtifactLeased). Each
  // config is handed out once, so this holds at most the space.
  absl::flat_hash_map<std::string, absl::flat_hash_set<uint64_t>> compile_grants;
  // Since when no live worker of the model could take it (AbandonOrphans).
  std::optional<absl::Time> orphaned_since;
  // When each principal last asked for work that this target's search
  // could give it (its older jobs had none): the principals it is shared
  // between (JobManager::ShareAllows).
  absl::flat_hash_map<std::string, absl::Time> wanted_by;
  std::string abandoned;  // why it was given up; empty while it is not

  // What a lease of this target is told of its best (the early-cut rule's
  // reference): 0 for finalists and verification leases, and for a cached
  // target.
  double BestFor(const Lease& lease) const;
  // The verification state clients see.
  v1::Verification VerificationView() const;
  // "claimed X for C of K; P (verifier) then Q (referee) measured Y".
  // REQUIRES: verification is set.
  std::string VerificationReason() const;
  // Whether the search's best must be re-measured by another principal
  // before it is served (NeedsVerification: one principal measured it, or it
  // beats the `served` best by more than the margin), and whether it can be:
  // kStarted sets `verification` (a deadline of now + options.wait in kAuto,
  // none in kRequired); kNoVerifier (kAuto, no device in `live` may verify
  // it) marks the target served unverified; kNotNeeded otherwise.
  enum class VerifyStart { kNotNeeded, kNoVerifier, kStarted };
  VerifyStart StartVerification(const VerifyOptions& options,
                                const std::optional<BestRecord>& served,
                                const std::vector<LiveDevice>& live, absl::Time now);
  // The orphan rule, for a target still searching: while no principal
  // takes part (`anyone_active` false) from `now` on for `timeout`, the
  // target is given up (`abandoned` says why; its search stops with
  // STOP_REASON_NO_WORKERS, its partial results are no best). True when it
  // was given up now.
  bool Orphaned(bool anyone_active, absl::Time now, absl::Duration timeout);
  // Records `results` reported on `lease` of this target, each config still
  // held by the lease (it then leaves lease->ordinals; one reported twice is
  // skipped): a search or finalists result completes its config (a
  // verification's results are its Verification's), and an OK one records
  // who measured it; a spot check's results leave the recheck queue
  // (TargetTrials::EndRecheck) for the JobManager to judge. Returns the statuses recorded in the
  // search round (what the metrics and quotas count); `recorded_results`
  // (when given) gets the search round's and the spot checks' results that
  // were recorded, for the spot checks.
  std::vector<v1::TrialStatus> Record(
      const std::vector<std::pair<uint64_t, v1::TrialResult>>& results, Lease* lease,
      std::vector<RecordedResult>* recorded_results = nullptr);
  // After a restart: puts this target's stored search-round rows among
  // `trials` back into `trials` (this target's TargetTrials, which must
  // exist), with who measured each OK config; the later rounds run again.
  // InvalidArgument for a row whose config is not in the space.
  absl::Status RestoreSearch(const std::vector<TrialRecord>& rows);
};

struct TuningJob {
  std::shared_ptr<const v1::JobSpec> spec;  // sources without their contents
  v1::Job view;  // id, state, reason, times
  std::vector<JobTarget> targets;
  int64_t version = 0;
  bool finishing = false;  // best configs on their way to the store

  // A job submitted at `now` by `owner` ("": anonymous) as `id`, with the
  // targets planned for it (none: it waits for a worker): SUCCEEDED at once
  // when every target was answered from the store, else QUEUED. The spec is
  // kept without its sources' contents.
  static std::unique_ptr<TuningJob> Submitted(const v1::JobSpec& spec, const std::string& id,
                                              const std::string& owner,
                                              std::vector<JobTarget> targets, absl::Time now);
  // After a restart, a job as `snapshot` stored it, without its targets (the
  // caller plans them again): the spec without its sources' contents, the
  // view without the counts the targets give it again, started at `now` when
  // a running job stored by an older coordinator has no start time; the
  // snapshot's version.
  static std::unique_ptr<TuningJob> Resumed(const JobSnapshot& snapshot, absl::Time now);
  // Why a job without targets waits: the backend (and model) it needs.
  static std::string WaitingReason(const v1::JobSpec& spec);

  // Neither final nor finishing: it may still lease, bind and change.
  bool Live() const;
  // The index of the target of `tuning_key`; -1 when the job has none.
  int TargetOf(const std::string& tuning_key) const;
  // True when the job has targets and none is searching any more.
  bool SearchesFinished() const;
  // What a job whose searches finished (and whose verifications settled)
  // ends with, at `now`: the best row of each target that found one, its
  // speed-up over the default config where that was measured, and the final
  // snapshot: SUCCEEDED when a target has a best (or was cached), else
  // FAILED; the reason names each target without a best, and each disputed
  // verification.
  struct Ending {
    std::vector<BestRecord> best;
    std::vector<double> speedups;
    JobSnapshot snapshot;
  };
  Ending End(absl::Time now) const;
  // True when a target is bound to (model, toolkit).
  bool HasTarget(const std::string& model, const std::string& toolkit) const;
  // The time budget: once the job has run spec->time_budget_seconds since it
  // started (view.started_unix_ms, stored with the job, so that the time a
  // coordinator was down counts), every target still searching stops at
  // `now`. True when it stopped one (the job changed).
  bool ApplyTimeBudget(absl::Time now);

  // Upkeep, for a live job (JobManager::Tick):
  // Adds the trials each target has left to hand out to its device model.
  void AddQueued(std::map<std::string, int64_t>* by_model) const;
  // The device models (with toolkits) of the targets still searching for
  // which `has_worker` is false, joined ("A (t1), B (t2)"); empty when every
  // one has a worker.
  std::string MissingWorkers(
      const std::function<bool(const v1::StoredTarget&)>& has_worker) const;
  // Sets the reason to say that no live worker can take the work of the
  // models `missing` names, or clears such a reason when `missing` is empty.
  // Leaves any other reason alone. True when the reason changed.
  bool ExplainStall(const std::string& missing);
  // For a job with nothing leased: when no target has work left to hand
  // out, configs still held are held by leases that no longer exist; they go
  // back to the queue. Returns how many (0 for none), or nullopt when a
  // target has work (nothing to repair).
  std::optional<int64_t> RepairStranded();
  // The orphan rule (JobTarget::Orphaned) for each target still searching,
  // `anyone_active` telling whether any principal takes part in it. Returns
  // why each target given up now was.
  std::vector<std::string> AbandonOrphans(
      const std::function<bool(const JobTarget&)>& anyone_active, absl::Time now,
      absl::Duration timeout);

  // The view clients see: the stored view with the spec's settings and the
  // targets' live counts, bests, verification and stop reasons.
  v1::Job View() const;
  // What the store keeps of the job (its spec, targets and view).
  JobSnapshot Snapshot() const;
  // The row of `result`, reported at `now` on `lease` of `target`.
  TrialRecord TrialRow(const JobTarget& target, const Lease& lease,
                       const v1::TrialResult& result, absl::Time now) const;
  // The same for the target of `tuning_key` of job `job_id`: needs neither
  // the job nor its lock.
  static TrialRecord TrialRow(const std::string& job_id, const std::string& tuning_key,
                              const Lease& lease, const v1::TrialResult& result, absl::Time now);
  // The best-config row of `target` for `best`, derived at `now`.
  BestRecord BestRow(const JobTarget& target, const TrialOutcome& best, absl::Time now) const;
  // Sets what the job did to the served best of `tuning_key` on its target
  // of that key in the snapshot's view (nothing for RetuneOutcome::kNone).
  static void RecordRetune(const RetuneVerdict& verdict, const std::string& tuning_key,
                           JobSnapshot* snapshot);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_TUNING_JOB_H_
