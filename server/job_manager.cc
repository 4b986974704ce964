#include "server/job_manager.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/public_status.h"
#include "common/status_macros.h"
#include "server/best_config_index.h"
#include "server/best_derivation.h"
#include "server/ids.h"
#include "server/job_log.h"

namespace tunefleet::server {
namespace {

bool HasContents(const v1::JobSpec& spec) {
  return std::any_of(spec.sources().begin(), spec.sources().end(),
                     [](const v1::SourceFile& f) { return !f.content().empty(); });
}

}  // namespace

JobManager::JobManager(const JobManagerOptions& options, Store* store,
                       WorkerRegistry* workers, SourceBlobs* blobs, Clock clock,
                       CoordinatorMetrics* metrics, BestConfigIndex* index,
                       QuarantineList* quarantine, BestKeeper* keeper)
    : options_(options),
      store_(store),
      workers_(workers),
      clock_(std::move(clock)),
      metrics_(metrics != nullptr ? metrics : &null_metrics_),
      index_(index),
      names_(index, workers),
      planner_(LimitsOf(options), options.history, store, workers, index),
      own_quarantine_(quarantine == nullptr ? std::make_unique<QuarantineList>(store) : nullptr),
      quarantine_(quarantine != nullptr ? quarantine : own_quarantine_.get()),
      own_keeper_(keeper == nullptr
                      ? std::make_unique<BestKeeper>(store, index, quarantine_,
                                                     [this] { return absl::ToUnixMillis(clock_()); })
                      : nullptr),
      keeper_(keeper != nullptr ? keeper : own_keeper_.get()),
      blobs_(blobs),
      repository_(store),
      writer_(store,
              TrialWriterOptions{/*max_batch_rows=*/2048, options.write_attempts,
                                 options.write_backoff},
              metrics_),
      quotas_(options.quotas),
      // Epochs never repeat across coordinator restarts: a report from a
      // lease of the previous process can never match a new one.
      leases_(absl::ToUnixMillis(clock_()) * 1000) {}

JobManager::~JobManager() = default;

void JobManager::SetWorkListener(std::function<void()> listener) {
  work_listener_ = std::move(listener);
}

AdmissionLimits JobManager::LimitsOf(const JobManagerOptions& options) {
  AdmissionLimits limits;
  limits.max_space_points = options.max_space_points;
  limits.max_trials = options.max_trials;
  limits.max_source_bytes = options.max_source_bytes;
  limits.max_tensor_bytes = options.max_tensor_bytes;
  limits.max_lease_attempts = options.max_lease_attempts;
  limits.finalists = options.finalists;
  limits.warm_start = static_cast<size_t>(std::max(0, options.warm_start));
  return limits;
}

int JobManager::ActiveJobsOf(const std::string& owner) {
  absl::ReaderMutexLock lock(&mu_);
  int active = 0;
  for (const auto& [sequence, job] : jobs_) {
    if (job->view.owner() == owner && !IsFinal(job->view.state())) ++active;
  }
  return active;
}

absl::StatusOr<v1::Job> JobManager::Submit(const v1::JobSpec& request, const std::string& owner) {
  if (!owner.empty()) {
    absl::Status quota = quotas_.CheckSubmit(owner, ActiveJobsOf(owner), clock_());
    if (!quota.ok()) {
      metrics_->JobSubmitted(CoordinatorMetrics::Submission::kRejected);
      job_log::Refused(request, quota);
      return quota;
    }
  }
  v1::JobSpec spec = request;
  const std::vector<WorkerDevice> devices = planner_.LiveModelsFor(spec);
  // A job for a model no live worker has waits for one: only when that model
  // is known, else it would wait forever.
  absl::Status valid = devices.empty()
                           ? names_.CheckDeviceModel("device_model", spec.device_model())
                           : absl::OkStatus();
  // With no live model to plan for, the space is walked once here instead,
  // so that a job that can never run is refused now.
  if (valid.ok()) valid = ValidateSpec(planner_.limits(), /*walk_space=*/devices.empty(), &spec);
  absl::Status first_error;
  std::vector<Target> targets;
  if (valid.ok()) targets = planner_.Plan(spec, devices, &first_error);
  if (!valid.ok() || (targets.empty() && !devices.empty())) {
    metrics_->JobSubmitted(CoordinatorMetrics::Submission::kRejected);
    job_log::Refused(request, valid.ok() ? first_error : valid);
    return valid.ok() ? first_error : valid;
  }
  // Nothing is published unless stored: sources, kernel, then the job.
  RETURN_IF_ERROR(blobs_->Save(spec));
  const absl::Time now = clock_();
  std::unique_ptr<Job> job =
      Job::Submitted(spec, NewId('j', now), owner, std::move(targets), now);
  RETURN_IF_ERROR(store_->PutKernel(
      KernelRecord{spec.kernel().name(), job->spec->SerializeAsString(),
                   absl::ToUnixMillis(now)}));
  if (index_ != nullptr) index_->PutKernel(*job->spec);
  const bool cached = job->view.state() == v1::JOB_STATE_SUCCEEDED;
  JobSnapshot snapshot;
  {
    absl::ReaderMutexLock lock(&mu_);
    snapshot = job->Snapshot();
  }
  RETURN_IF_ERROR(repository_.Save(snapshot));
  metrics_->JobStateChanged(v1::JOB_STATE_UNSPECIFIED, job->view.state());
  metrics_->JobSubmitted(cached ? CoordinatorMetrics::Submission::kCached
                                : CoordinatorMetrics::Submission::kAccepted);
  job_log::Submitted(snapshot.stored.last_view(), spec, cached);
  if (cached) return snapshot.stored.last_view();  // answered; never held
  blobs_->Hold(spec);
  {
    absl::MutexLock lock(&mu_);
    StartJob(std::move(job));
  }
  // A worker that registered while the job was being stored found nothing
  // to bind: bind for it now.
  for (const WorkerDevice& device : planner_.LiveModelsFor(spec)) {
    const bool planned = std::any_of(devices.begin(), devices.end(), [&](const WorkerDevice& d) {
      return d.device.model() == device.device.model() && d.toolkit == device.toolkit;
    });
    if (!planned) {
      OnWorkerRegistered();
      break;
    }
  }
  if (work_listener_) work_listener_();
  return snapshot.stored.last_view();
}

void JobManager::StartJob(std::unique_ptr<Job> job) {
  const int64_t sequence = next_sequence_++;
  sequence_of_[job->view.id()] = sequence;
  jobs_[sequence] = std::move(job);
}

JobManager::Job* JobManager::FindJob(const std::string& id) {
  auto it = sequence_of_.find(id);
  return it == sequence_of_.end() ? nullptr : jobs_.at(it->second).get();
}

void JobManager::Evict(Job* job) {
  blobs_->Release(*job->spec);
  auto it = sequence_of_.find(job->view.id());
  jobs_.erase(it->second);
  sequence_of_.erase(it);
  changes_.fetch_add(1, std::memory_order_release);
}

size_t JobManager::live_jobs() {
  absl::ReaderMutexLock lock(&mu_);
  return jobs_.size();
}

absl::StatusOr<v1::Job> JobManager::Get(const std::string& job_id) {
  {
    absl::ReaderMutexLock lock(&mu_);
    if (Job* job = FindJob(job_id)) return job->View();
  }
  absl::StatusOr<JobSnapshot> stored = repository_.Load(job_id);
  if (absl::IsNotFound(stored.status())) {
    return absl::NotFoundError(absl::StrCat("no job ", job_id));
  }
  if (!stored.ok()) return stored.status();
  return stored->stored.last_view();
}

absl::StatusOr<std::vector<v1::Job>> JobManager::List(const JobQuery& query) {
  ASSIGN_OR_RETURN(std::vector<v1::Job> views, repository_.ListViews(query));
  absl::ReaderMutexLock lock(&mu_);
  for (v1::Job& view : views) {
    if (Job* job = FindJob(view.id())) view = job->View();  // live counts
  }
  return views;
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& job_id) {
  JobSnapshot snapshot;
  {
    absl::ReaderMutexLock lock(&mu_);
    Job* job = FindJob(job_id);
    if (job != nullptr && job->finishing) return job->View();  // ends on its own
    if (job != nullptr) snapshot = job->Snapshot();
  }
  if (snapshot.id().empty()) return Get(job_id);  // finished already, or NotFound
  MarkFinal(&snapshot, v1::JOB_STATE_CANCELLED, "cancelled by a client", clock_());
  RETURN_IF_ERROR(repository_.Save(snapshot, [this, &job_id] {
    absl::ReaderMutexLock lock(&mu_);
    const Job* job = FindJob(job_id);
    return job != nullptr && !job->finishing;  // else it ends on its own
  }));
  {
    absl::MutexLock lock(&mu_);
    Job* job = FindJob(job_id);
    if (job != nullptr && !job->finishing) {
      leases_.TakeJob(job_id);
      SetState(job, v1::JOB_STATE_CANCELLED, snapshot.stored.last_view().reason());
      v1::Job cancelled = job->View();
      job_log::Finished(cancelled);
      metrics_->SearchFinished(v1::STOP_REASON_CANCELLED);
      Evict(job);
      return cancelled;
    }
  }
  return Get(job_id);  // it finished meanwhile
}

absl::StatusOr<int64_t> JobManager::LiveVersion(const std::string& job_id, v1::Job* view) {
  absl::ReaderMutexLock lock(&mu_);
  const Job* job = FindJob(job_id);
  if (job == nullptr) return absl::NotFoundError(absl::StrCat("job ", job_id, " is not live"));
  if (view != nullptr) *view = job->View();
  return job->version;
}

void JobManager::OnWorkerRegistered() {
  struct Unbound {
    std::string id;
    std::shared_ptr<const v1::JobSpec> spec;
    std::vector<WorkerDevice> devices;
  };
  std::vector<Unbound> unbound;
  {
    absl::ReaderMutexLock lock(&mu_);
    for (const auto& [sequence, job] : jobs_) {
      if (!job->Live()) continue;
      Unbound entry{job->view.id(), job->spec, {}};
      for (const WorkerDevice& device : planner_.LiveModelsFor(*job->spec)) {
        if (!job->HasTarget(device.device.model(), device.toolkit)) {
          entry.devices.push_back(device);
        }
      }
      if (!entry.devices.empty()) unbound.push_back(std::move(entry));
    }
  }
  Pending pending;
  for (Unbound& entry : unbound) {
    absl::Status first_error;
    std::vector<Target> targets = planner_.Plan(*entry.spec, entry.devices, &first_error);
    absl::MutexLock lock(&mu_);
    Job* job = FindJob(entry.id);
    if (job == nullptr || !job->Live()) continue;
    for (Target& target : targets) {
      if (!job->HasTarget(target.info.device_model(), target.info.toolkit())) {
        job->targets.push_back(std::move(target));
      }
    }
    if (job->targets.empty()) {
      job->view.set_reason(!first_error.ok() ? PublicMessage(first_error)
                                             : Job::WaitingReason(*job->spec));
    } else if (job->view.state() == v1::JOB_STATE_QUEUED) {
      job->view.set_reason("");
    }
    Changed(job);
    // Best effort: a binding the store missed is made again after a restart.
    pending.snapshots.push_back(job->Snapshot());
    MaybeFinish(job, &pending);
    pending.work = true;
  }
  Flush(std::move(pending));
}

void JobManager::MaybeFinish(Job* job, Pending* pending) {
  if (!job->Live() || !job->SearchesFinished()) return;
  bool settled = true;
  for (Target& target : job->targets) {
    if (target.trials != nullptr && target.abandoned.empty() &&
        !VerificationSettled(*job, &target, pending)) {
      settled = false;
    }
  }
  if (!settled) return;
  const std::string& id = job->view.id();
  if (std::any_of(unstored_rows_.begin(), unstored_rows_.end(),
                  [&](const TrialRecord& row) { return row.job_id == id; })) {
    unfinished_writes_.insert(id);  // Tick stores the rows, then finishes
    return;
  }
  TuningJob::Ending ending = job->End(clock_());
  job->finishing = true;
  Finish finish;
  finish.job_id = id;
  finish.best = std::move(ending.best);
  finish.speedups = std::move(ending.speedups);
  finish.snapshot = std::move(ending.snapshot);
  pending->finishes.push_back(std::move(finish));
}

void JobManager::Flush(Pending pending) {
  const bool rows_stored = pending.rows.empty() || writer_.Write(pending.rows).ok();
  if (!rows_stored) {
    absl::MutexLock lock(&mu_);
    unstored_rows_.insert(unstored_rows_.end(), pending.rows.begin(), pending.rows.end());
  }
  // Best effort: a job whose RUNNING state the store missed is resumed from
  // its trials all the same. A job that is finishing or finished has its
  // final row written (or on its way): an older snapshot must not replace it.
  for (const JobSnapshot& snapshot : pending.snapshots) {
    repository_
        .Save(snapshot,
              [this, &snapshot] {
                absl::ReaderMutexLock lock(&mu_);
                const Job* job = FindJob(snapshot.id());
                return job != nullptr && !job->finishing;
              })
        .IgnoreError();
  }
  // Quarantines first: the finishes derive their bests without the trials
  // of a principal a verification just caught.
  for (const Quarantined& quarantined : pending.quarantines) Quarantine(quarantined);
  for (Finish& finish : pending.finishes) {
    // A job ends only once every row of it is stored.
    bool stored = rows_stored;
    for (const BestRecord& best : finish.best) {
      if (!stored) break;
      absl::StatusOr<RetuneVerdict> verdict = keeper_->RederiveFinished(best);
      stored = verdict.ok();
      if (stored) TuningJob::RecordRetune(*verdict, best.tuning_key, &finish.snapshot);
    }
    stored = stored && repository_.Save(finish.snapshot).ok();
    CompleteFinish(finish, stored);
  }
  if (pending.work && work_listener_) work_listener_();
}

void JobManager::CompleteFinish(const Finish& finish, bool stored) {
  absl::MutexLock lock(&mu_);
  Job* job = FindJob(finish.job_id);
  if (job == nullptr) return;
  job->finishing = false;
  if (!stored) {
    unfinished_writes_.insert(finish.job_id);  // Tick tries again
    return;
  }
  unfinished_writes_.erase(finish.job_id);
  for (double speedup : finish.speedups) metrics_->SpeedupObserved(speedup);
  const v1::Job& view = finish.snapshot.stored.last_view();
  job_log::Finished(view);
  for (const v1::Target& target : view.targets()) {
    if (target.retune().outcome() == v1::RETUNE_OUTCOME_UNSPECIFIED) continue;
    job_log::Retuned(view, target);
    metrics_->RetuneFinished(target.retune().outcome());
  }
  metrics_->SearchFinished(view.stop_reason());
  SetState(job, view.state(), view.reason());
  leases_.TakeJob(finish.job_id);
  Evict(job);
}

void JobManager::SetState(Job* job, v1::JobState state, const std::string& reason) {
  metrics_->JobStateChanged(job->view.state(), state);
  job->view.set_state(state);
  job->view.set_reason(reason);
  Changed(job);
}

void JobManager::Changed(Job* job) {
  job->view.set_updated_unix_ms(absl::ToUnixMillis(clock_()));
  ++job->version;
  changes_.fetch_add(1, std::memory_order_release);
}

absl::Status JobManager::Recover() {
  if (own_quarantine_ != nullptr) RETURN_IF_ERROR(own_quarantine_->Load());
  ASSIGN_OR_RETURN(JobRepository::Unfinished unfinished, repository_.LoadUnfinished());
  // One job that cannot be resumed (a corrupt row, caps lowered since) must
  // not keep the coordinator from starting: it fails with the reason.
  for (auto& [record, error] : unfinished.failures) {
    record.state = v1::JOB_STATE_FAILED;
    record.reason = absl::StrCat("cannot be resumed after a restart: ", error);
    store_->PutJob(record).IgnoreError();
  }
  for (JobSnapshot& snapshot : unfinished.jobs) {
    absl::Status resumed = Resume(snapshot);
    if (resumed.ok()) continue;
    MarkFinal(&snapshot, v1::JOB_STATE_FAILED,
              absl::StrCat("cannot be resumed after a restart: ", resumed.message()), clock_());
    RETURN_IF_ERROR(repository_.Save(snapshot));
  }
  return absl::OkStatus();
}

absl::Status JobManager::Resume(const JobSnapshot& snapshot) {
  std::unique_ptr<Job> job = Job::Resumed(snapshot, clock_());
  // Older coordinators kept the contents in the job row, and had no kernels
  // table: both are filled from the row (jobs resume oldest first, so the
  // newest unfinished spec of a kernel is the one kept).
  if (HasContents(snapshot.spec)) {
    RETURN_IF_ERROR(blobs_->Save(snapshot.spec));
    RETURN_IF_ERROR(store_->PutKernel(KernelRecord{job->spec->kernel().name(),
                                                   job->spec->SerializeAsString(),
                                                   absl::ToUnixMillis(clock_())}));
    if (index_ != nullptr) index_->PutKernel(*job->spec);
  }
  ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_->ListTrials(snapshot.id()));
  for (const v1::StoredTarget& info : snapshot.stored.targets()) {
    ASSIGN_OR_RETURN(Target target, planner_.Resume(*job->spec, info, trials));
    job->targets.push_back(std::move(target));
  }
  blobs_->Hold(snapshot.spec);
  Pending pending;
  {
    absl::MutexLock lock(&mu_);
    metrics_->JobStateChanged(v1::JOB_STATE_UNSPECIFIED, job->view.state());
    Job* raw = job.get();
    StartJob(std::move(job));
    MaybeFinish(raw, &pending);
  }
  Flush(std::move(pending));
  return absl::OkStatus();
}

}  // namespace tunefleet::server
