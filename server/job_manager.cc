#include "server/job_manager.h"

#include <algorithm>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_text.h"
#include "common/public_status.h"
#include "common/status_macros.h"
#include "server/best_config_index.h"
#include "server/best_derivation.h"
#include "server/ids.h"
#include "server/job_log.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {
namespace {

// 10 x major + minor from a CUDA device's limits (90 for sm_90); 0 when
// they are not there (another backend).
int ComputeCapability(const google::protobuf::RepeatedPtrField<v1::DeviceLimit>& limits) {
  int64_t major = 0;
  int64_t minor = 0;
  for (const v1::DeviceLimit& limit : limits) {
    if (limit.name() == "cc_major") major = limit.value();
    if (limit.name() == "cc_minor") minor = limit.value();
  }
  return static_cast<int>(10 * major + minor);
}

std::shared_ptr<const v1::JobSpec> WithoutContents(const v1::JobSpec& spec) {
  auto stripped = std::make_shared<v1::JobSpec>(spec);
  for (v1::SourceFile& file : *stripped->mutable_sources()) file.clear_content();
  return stripped;
}

bool HasContents(const v1::JobSpec& spec) {
  return std::any_of(spec.sources().begin(), spec.sources().end(),
                     [](const v1::SourceFile& f) { return !f.content().empty(); });
}

constexpr absl::string_view kStallReason = "no live worker can take its work: none with ";

std::string WaitingReason(const v1::JobSpec& spec) {
  return absl::StrCat("waiting for a worker with a ",
                      v1::Backend_Name(spec.kernel().backend()), " device",
                      spec.device_model().empty()
                          ? ""
                          : absl::StrCat(" of model ", spec.device_model()));
}

}  // namespace

JobManager::JobManager(const JobManagerOptions& options, Store* store,
                       WorkerRegistry* workers, SourceBlobs* blobs, Clock clock,
                       CoordinatorMetrics* metrics, BestConfigIndex* index,
                       QuarantineList* quarantine, BestKeeper* keeper)
    : options_(options),
      limits_(LimitsOf(options)),
      store_(store),
      workers_(workers),
      clock_(std::move(clock)),
      metrics_(metrics != nullptr ? metrics : &null_metrics_),
      index_(index),
      names_(index, workers),
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

std::vector<WorkerDevice> JobManager::LiveModelsFor(const v1::JobSpec& spec) {
  std::vector<WorkerDevice> devices = workers_->LiveModels(spec.kernel().backend());
  if (spec.device_model().empty()) return devices;
  devices.erase(std::remove_if(devices.begin(), devices.end(),
                               [&](const WorkerDevice& d) {
                                 return d.device.model() != spec.device_model();
                               }),
                devices.end());
  return devices;
}

std::vector<JobManager::Target> JobManager::PlanTargets(
    const v1::JobSpec& spec, const std::vector<WorkerDevice>& devices,
    absl::Status* first_error) {
  std::vector<Target> targets;
  // Read once per model, and only for a target the cache does not answer.
  absl::flat_hash_map<std::string, std::vector<FleetTrial>> history_of;
  for (const WorkerDevice& device : devices) {
    const std::string& model = device.device.model();
    auto history = [&]() -> std::vector<FleetTrial> {
      auto it = history_of.find(model);
      if (it == history_of.end()) it = history_of.emplace(model, HistoryFor(spec, model)).first;
      return it->second;
    };
    absl::StatusOr<TargetPlan> plan =
        PlanTarget(limits_, spec, device, store_, WarmStartFor(spec, device), history);
    if (!plan.ok()) {
      // A model without a valid config is left unbound; others may run it.
      if (first_error->ok()) *first_error = plan.status();
      continue;
    }
    Target& target = targets.emplace_back();
    target.info = std::move(plan->info);
    target.trials = std::move(plan->trials);
  }
  return targets;
}

std::vector<std::string> JobManager::WarmStartFor(const v1::JobSpec& spec,
                                                  const WorkerDevice& device) const {
  std::vector<std::string> configs;
  if (index_ == nullptr || !spec.config_set().empty()) return configs;
  for (const BestConfigAnswer& neighbour :
       index_->Neighbours(spec.kernel().name(), spec.shape(), device.device.model(),
                          device.toolkit, limits_.warm_start)) {
    configs.push_back(neighbour.config_text);
  }
  return configs;
}

std::vector<FleetTrial> JobManager::HistoryFor(const v1::JobSpec& spec,
                                               const std::string& model) const {
  if (index_ == nullptr || spec.strategy() != "model" || !spec.config_set().empty()) return {};
  absl::StatusOr<std::vector<FleetTrial>> history = FleetHistory(
      *index_, store_, spec.kernel().name(), spec.shape(), model, options_.history);
  if (!history.ok()) {
    // The job still searches, on its own results only.
    spdlog::warn("the fleet's history of kernel {} on {} is not read: {}", spec.kernel().name(),
                 model, history.status().ToString());
    return {};
  }
  return *std::move(history);
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
  const std::vector<WorkerDevice> devices = LiveModelsFor(spec);
  // A job for a model no live worker has waits for one: only when that model
  // is known, else it would wait forever.
  absl::Status valid = devices.empty()
                           ? names_.CheckDeviceModel("device_model", spec.device_model())
                           : absl::OkStatus();
  // With no live model to plan for, the space is walked once here instead,
  // so that a job that can never run is refused now.
  if (valid.ok()) valid = ValidateSpec(limits_, /*walk_space=*/devices.empty(), &spec);
  absl::Status first_error;
  std::vector<Target> targets;
  if (valid.ok()) targets = PlanTargets(spec, devices, &first_error);
  if (!valid.ok() || (targets.empty() && !devices.empty())) {
    metrics_->JobSubmitted(CoordinatorMetrics::Submission::kRejected);
    job_log::Refused(request, valid.ok() ? first_error : valid);
    return valid.ok() ? first_error : valid;
  }
  // Nothing is published unless stored: sources, kernel, then the job.
  RETURN_IF_ERROR(blobs_->Save(spec));
  auto job = std::make_unique<Job>();
  job->spec = WithoutContents(spec);
  RETURN_IF_ERROR(store_->PutKernel(
      KernelRecord{spec.kernel().name(), job->spec->SerializeAsString(),
                   absl::ToUnixMillis(clock_())}));
  if (index_ != nullptr) index_->PutKernel(*job->spec);
  const absl::Time now = clock_();
  job->view.set_id(NewId('j', now));
  job->view.set_owner(owner);
  job->view.set_sweep_id(spec.sweep_id());
  job->view.set_state(v1::JOB_STATE_QUEUED);
  job->view.set_created_unix_ms(absl::ToUnixMillis(now));
  job->view.set_updated_unix_ms(absl::ToUnixMillis(now));
  if (targets.empty()) job->view.set_reason(WaitingReason(spec));
  job->targets = std::move(targets);
  const bool cached = !job->targets.empty() &&
                      std::all_of(job->targets.begin(), job->targets.end(),
                                  [](const Target& t) { return t.trials == nullptr; });
  if (cached) job->view.set_state(v1::JOB_STATE_SUCCEEDED);
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
  for (const WorkerDevice& device : LiveModelsFor(spec)) {
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
  changed_cv_.SignalAll();
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

absl::StatusOr<v1::Job> JobManager::WaitForChange(const std::string& job_id,
                                                  int64_t* version,
                                                  absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  {
    absl::MutexLock lock(&mu_);
    while (Job* job = FindJob(job_id)) {
      if (job->version != *version || absl::Now() >= deadline) {
        *version = job->version;
        return job->View();
      }
      changed_cv_.WaitWithDeadline(&mu_, deadline);
    }
  }
  // Not live: finished (and answered from the store), or unknown.
  ASSIGN_OR_RETURN(v1::Job stored, Get(job_id));
  if (!IsFinal(stored.state())) {
    // Stored but not live yet (being submitted or resumed): wait a little.
    absl::SleepFor(std::min(timeout, absl::Milliseconds(100)));
  }
  *version = std::numeric_limits<int64_t>::max();
  return stored;
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
      if (IsFinal(job->view.state()) || job->finishing) continue;
      Unbound entry{job->view.id(), job->spec, {}};
      for (const WorkerDevice& device : LiveModelsFor(*job->spec)) {
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
    std::vector<Target> targets = PlanTargets(*entry.spec, entry.devices, &first_error);
    absl::MutexLock lock(&mu_);
    Job* job = FindJob(entry.id);
    if (job == nullptr || IsFinal(job->view.state()) || job->finishing) continue;
    for (Target& target : targets) {
      if (!job->HasTarget(target.info.device_model(), target.info.toolkit())) {
        job->targets.push_back(std::move(target));
      }
    }
    if (job->targets.empty()) {
      job->view.set_reason(!first_error.ok() ? PublicMessage(first_error)
                                             : WaitingReason(*job->spec));
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

absl::StatusOr<std::optional<LeaseGrant>> JobManager::TryLease(const LeaseQuery& query) {
  ASSIGN_OR_RETURN(WorkerRegistry::ModelOf device,
                   workers_->TouchDevice(query.worker_id, query.device_id));
  if (quarantine_->Contains(device.principal)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "worker principal ", device.principal,
        " is quarantined: its results disagreed with a re-measurement by another worker"));
  }
  const int max = BatchFor(query.max_trials);
  const std::vector<LiveDevice> live = workers_->LiveDevices(device.model, device.toolkit);
  Lease lease;
  lease.worker_id = query.worker_id;
  lease.device_id = device.device_id;
  lease.principal = device.principal;
  Pending pending;
  std::optional<LeaseGrant> grant;
  {
    absl::MutexLock lock(&mu_);
    asked_[device.principal] = clock_();  // it asks for work: it takes part
    if (leases_.CountOnDevice(query.worker_id, device.device_id) >=
        std::max(1, options_.max_leases_per_device)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "device ", device.device_id, " of worker ", query.worker_id, " holds ",
          options_.max_leases_per_device, " leases already; report or release one first"));
    }
    for (auto& [sequence, job] : jobs_) {
      if (IsFinal(job->view.state()) || job->finishing) continue;
      for (int t = 0; t < static_cast<int>(job->targets.size()) && !grant; ++t) {
        const Target& target = job->targets[t];
        if (target.trials == nullptr || target.info.device_model() != device.model ||
            target.info.toolkit() != device.toolkit) {
          continue;
        }
        if (target.verification != nullptr) {
          grant = VerifyFrom(job.get(), t, lease, live, &pending);
        } else if (target.trials->HasWork()) {
          grant = LeaseFrom(job.get(), t, lease, max, &pending);
        }
      }
      if (grant.has_value()) break;
    }
  }
  Flush(std::move(pending));
  return grant;
}

int JobManager::BatchFor(int asked) const {
  return std::clamp(asked > 0 ? asked : options_.batch_size, 1,
                    std::max(1, options_.max_batch_size));
}

std::vector<CompileGrant> JobManager::ProposeCompiles(const CompileQuery& query) {
  int left = BatchFor(query.max_configs);
  std::vector<CompileGrant> grants;
  absl::MutexLock lock(&mu_);
  for (auto& [sequence, job] : jobs_) {
    if (left <= 0) break;
    if (IsFinal(job->view.state()) || job->finishing ||
        job->spec->kernel().backend() != v1::BACKEND_CUDA) {
      continue;
    }
    for (Target& target : job->targets) {
      if (left <= 0) break;
      if (target.trials == nullptr || target.info.toolkit() != query.toolkit ||
          ComputeCapability(target.info.limits()) != query.compute_capability) {
        continue;
      }
      std::vector<uint64_t> ordinals = target.trials->ProposeAhead(left, options_.compile_ahead);
      if (ordinals.empty()) continue;
      CompileGrant& grant = grants.emplace_back();
      grant.job_id = job->view.id();
      grant.spec = job->spec;
      grant.device.set_model(target.info.device_model());
      grant.device.set_backend(v1::BACKEND_CUDA);
      *grant.device.mutable_limits() = target.info.limits();
      for (uint64_t ordinal : ordinals) {
        grant.configs.push_back(target.trials->space()->ConfigAt(ordinal));
      }
      left -= static_cast<int>(ordinals.size());
    }
  }
  return grants;
}

std::optional<LeaseGrant> JobManager::LeaseFrom(Job* job, int t, Lease lease, int max,
                                                Pending* pending) {
  Target& target = job->targets[t];
  lease.job_id = job->view.id();
  lease.target = t;
  lease.expires = clock_() + options_.lease_ttl;
  lease.idle_until = clock_() + options_.lease_idle_limit;
  // The lease id and epoch are the book's; Take needs them first.
  const Lease& granted = leases_.Grant(std::move(lease));
  const std::string lease_id = granted.id;
  const int64_t epoch = granted.epoch;
  ApplyTimeBudget(job);
  bool finalists = false;
  std::vector<uint64_t> ordinals =
      target.trials->Take(max, lease_id, epoch, &finalists, HolderOf(target, granted.principal));
  if (ordinals.empty()) {
    leases_.Remove(lease_id);
    MaybeFinish(job, pending);  // a restored target may turn out to be complete
    return std::nullopt;
  }
  Lease* held = leases_.Find(lease_id, epoch, granted.worker_id);
  held->ordinals = ordinals;
  held->finalists = finalists;
  return GrantOf(job, *held, pending);
}

LeaseGrant JobManager::GrantOf(Job* job, const Lease& lease, Pending* pending) {
  const Target& target = job->targets[lease.target];
  LeaseGrant grant;
  grant.lease_id = lease.id;
  grant.epoch = lease.epoch;
  grant.expires = lease.expires;
  grant.job_id = job->view.id();
  grant.spec = job->spec;
  grant.tuning_key = target.info.tuning_key();
  grant.kind = lease.finalists ? v1::LEASE_KIND_FINALISTS : v1::LEASE_KIND_SEARCH;
  grant.best_seconds = target.BestFor(lease);
  for (uint64_t ordinal : lease.ordinals) {
    grant.trials.emplace_back(ordinal, target.trials->space()->ConfigAt(ordinal));
  }
  metrics_->LeaseGranted(static_cast<int>(lease.ordinals.size()));
  if (job->view.state() == v1::JOB_STATE_QUEUED) {
    if (job->view.started_unix_ms() == 0) {
      job->view.set_started_unix_ms(absl::ToUnixMillis(clock_()));
    }
    SetState(job, v1::JOB_STATE_RUNNING, "");
    job_log::Started(job->view, lease);
    pending->snapshots.push_back(job->Snapshot());
  }
  return grant;
}

bool JobManager::ApplyTimeBudget(Job* job) {
  if (!job->ApplyTimeBudget(clock_())) return false;
  Changed(job);
  return true;
}

namespace {

// The reported result of `ordinal` with the config as the space defines it.
v1::TrialResult Normalized(TargetTrials& trials, uint64_t ordinal,
                           const v1::TrialResult& reported) {
  v1::TrialResult result = reported;
  *result.mutable_config() = trials.space()->ConfigAt(ordinal);
  if (result.status() == v1::TRIAL_STATUS_UNSPECIFIED) {
    result.set_status(v1::TRIAL_STATUS_CRASHED);
    result.set_error("the worker reported no status");
  }
  return result;
}

}  // namespace

absl::Status JobManager::RefuseQuarantined(const ResultReport& report) {
  absl::StatusOr<std::string> principal = workers_->PrincipalOf(report.worker_id);
  if (!principal.ok() || !quarantine_->Contains(*principal)) return absl::OkStatus();
  Pending refused;
  {
    absl::MutexLock lock(&mu_);
    if (leases_.Find(report.lease_id, report.epoch, report.worker_id) != nullptr) {
      ReturnLease(leases_.Remove(report.lease_id), /*expired=*/false, &refused);
    }
  }
  Flush(std::move(refused));
  return absl::PermissionDeniedError(
      absl::StrCat("worker principal ", *principal,
                   " is quarantined: its results are refused and its lease was returned"));
}

absl::StatusOr<ReportAck> JobManager::Report(const ResultReport& report) {
  RETURN_IF_ERROR(RefuseQuarantined(report));
  workers_->Touch(report.worker_id);
  std::vector<std::pair<uint64_t, v1::TrialResult>> results;  // held by the lease
  std::vector<TrialRecord> rows;
  {
    absl::MutexLock lock(&mu_);
    Lease* lease = leases_.Find(report.lease_id, report.epoch, report.worker_id);
    if (lease == nullptr) return ReportAck{absl::InfinitePast(), /*cancelled=*/true};
    const Job& job = *FindJob(lease->job_id);
    const Target& target = job.targets[lease->target];
    for (const auto& [ordinal, result] : report.trials) {
      const bool held = std::find(lease->ordinals.begin(), lease->ordinals.end(),
                                  ordinal) != lease->ordinals.end();
      if (!held) continue;
      results.emplace_back(ordinal, Normalized(*target.trials, ordinal, result));
      // A verification's rows are stored once its round is judged
      // (ApplyVerification): a round released half-measured leaves none.
      if (!lease->verify) rows.push_back(job.TrialRow(target, *lease, results.back().second, clock_()));
    }
    // The worker is alive: the lease must not expire while the rows are written.
    leases_.Renew(lease->id, clock_() + options_.lease_ttl);
  }
  const absl::Status written = writer_.Write(rows);
  Pending pending;
  ReportAck ack;
  {
    absl::MutexLock lock(&mu_);
    Lease* lease = leases_.Find(report.lease_id, report.epoch, report.worker_id);
    if (!written.ok()) {
      if (lease != nullptr) {
        ReturnLease(leases_.Remove(report.lease_id), /*expired=*/false, &pending);
      }
    } else if (lease == nullptr) {
      ack.cancelled = true;  // expired or cancelled meanwhile; the rows stand
    } else {
      ack.expires = clock_() + options_.lease_ttl;
      ack.best_seconds = FindJob(lease->job_id)->targets[lease->target].BestFor(*lease);
      ApplyReport(results, report.release, lease, &pending);
    }
  }
  Flush(std::move(pending));
  if (!written.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "the store did not record the results (", written.message(),
        "); the lease was returned and its trials will be measured again"));
  }
  return ack;
}

void JobManager::ApplyReport(const std::vector<std::pair<uint64_t, v1::TrialResult>>& results,
                             bool release, Lease* lease, Pending* pending) {
  Job* job = FindJob(lease->job_id);
  Target& target = job->targets[lease->target];
  const std::vector<v1::TrialStatus> measured = target.Record(results, lease);
  for (v1::TrialStatus status : measured) metrics_->TrialRecorded(status);
  quotas_.CountTrials(job->view.owner(), static_cast<int64_t>(measured.size()), clock_());
  if (lease->verify) ApplyVerification(results, *lease, &target, pending);
  if (!results.empty()) lease->idle_until = clock_() + options_.lease_idle_limit;
  leases_.Renew(lease->id, clock_() + options_.lease_ttl);
  if (release) {
    ReturnLease(leases_.Remove(lease->id), /*expired=*/false, pending);
  } else if (lease->ordinals.empty()) {
    leases_.Remove(lease->id);
  }
  if (target.trials->HasWork()) pending->work = true;  // e.g. the finalists round
  MaybeFinish(job, pending);
  Changed(job);
}

std::vector<std::string> JobManager::ActivePrincipals(const Target& target) const {
  std::vector<std::string> active;
  const absl::Time since = clock_() - kActiveWindowTtls * options_.lease_ttl;
  for (const LiveDevice& device :
       workers_->LiveDevices(target.info.device_model(), target.info.toolkit())) {
    auto asked = asked_.find(device.principal);
    if (asked == asked_.end() || asked->second < since ||
        quarantine_->Contains(device.principal) ||
        std::find(active.begin(), active.end(), device.principal) != active.end()) {
      continue;
    }
    active.push_back(device.principal);
  }
  return active;
}

Holder JobManager::HolderOf(const Target& target, const std::string& principal) const {
  return Holder{principal, ActivePrincipals(target)};
}

void JobManager::ReturnLease(const Lease& lease, bool expired, Pending* pending) {
  Job* job = FindJob(lease.job_id);
  if (job == nullptr) return;
  Target& target = job->targets[lease.target];
  if (lease.verify && target.verification != nullptr) {
    target.verification->Release(lease.id, lease.epoch);  // another verifier may take it
  }
  // Only a lapsed lease counts as lost, and only then does the loss rule
  // need the fleet's active principals.
  const Holder holder = expired ? HolderOf(target, lease.principal) : Holder{};
  for (uint64_t ordinal : lease.verify ? std::vector<uint64_t>() : lease.ordinals) {
    std::optional<v1::TrialResult> lost =
        target.trials->Release(ordinal, lease.id, lease.epoch, expired, holder);
    if (!lost.has_value()) continue;
    pending->rows.push_back(job->TrialRow(target, lease, *lost, clock_()));
    metrics_->TrialRecorded(lost->status());
  }
  pending->work = true;
  MaybeFinish(job, pending);
  Changed(job);
}

bool JobManager::Grants(const std::string& lease_id) const {
  return LeaseBook::IsLeaseId(lease_id);
}

void JobManager::RenewLeases(const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  leases_.RenewWorker(worker_id, clock_() + options_.lease_ttl);
}

void JobManager::Tick() {
  if (const int forgotten = workers_->Prune(); forgotten > 0) {
    job_log::WorkersForgotten(forgotten);
  }
  std::vector<v1::WorkerInfo> workers = workers_->List();
  metrics_->WorkersAlive(static_cast<int>(std::count_if(
      workers.begin(), workers.end(), [](const v1::WorkerInfo& w) { return w.alive(); })));
  Pending pending;
  std::vector<std::pair<std::string, int64_t>> queued;
  {
    absl::MutexLock lock(&mu_);
    for (const Lease& lease : leases_.TakeExpired(clock_())) {
      metrics_->LeaseExpired();
      job_log::LeaseExpired(lease);
      ReturnLease(lease, /*expired=*/true, &pending);
    }
    pending.rows.insert(pending.rows.end(), unstored_rows_.begin(), unstored_rows_.end());
    unstored_rows_.clear();
    pending.quarantines.swap(unstored_quarantines_);
    const std::vector<std::string> unfinished(unfinished_writes_.begin(),
                                              unfinished_writes_.end());
    for (const std::string& id : unfinished) {
      if (Job* job = FindJob(id)) MaybeFinish(job, &pending);
    }
    for (auto& [sequence, job] : jobs_) {
      const bool verifying = std::any_of(
          job->targets.begin(), job->targets.end(), [](const Target& t) {
            return t.verification != nullptr && !t.verification->done();
          });
      if (verifying) MaybeFinish(job.get(), &pending);  // an auto verification's deadline
      if (ApplyTimeBudget(job.get())) {
        pending.work = true;  // the finalists round may be ready
        MaybeFinish(job.get(), &pending);
      }
    }
    RepairStranded(&pending);
    AbandonOrphans(&pending);
    ExplainStalls();
    queued = QueuedByModel();
  }
  metrics_->QueuedTrials(queued);
  Flush(std::move(pending));
}

std::vector<std::pair<std::string, int64_t>> JobManager::QueuedByModel() const {
  std::map<std::string, int64_t> by_model;
  for (const auto& [sequence, job] : jobs_) {
    for (const Target& target : job->targets) {
      if (target.trials == nullptr) continue;
      by_model[target.info.device_model()] += target.trials->queued();
    }
  }
  return {by_model.begin(), by_model.end()};
}

void JobManager::ExplainStalls() {
  for (auto& [sequence, job] : jobs_) {
    if (IsFinal(job->view.state()) || job->finishing || job->targets.empty()) continue;
    // A stall reason may come back from the store with a resumed job.
    const std::string& current = job->view.reason();
    if (!current.empty() && !absl::StartsWith(current, kStallReason)) continue;
    const std::string missing = MissingWorkers(*job);
    const std::string reason =
        missing.empty() ? "" : absl::StrCat(kStallReason, missing, "; it waits for one");
    if (reason == current) continue;
    job_log::Stalled(job->view.id(), reason);
    job->view.set_reason(reason);
    Changed(job.get());
  }
}

void JobManager::RepairStranded(Pending* pending) {
  for (auto& [sequence, job] : jobs_) {
    if (IsFinal(job->view.state()) || job->finishing || job->targets.empty() ||
        leases_.HasJob(job->view.id()) || unfinished_writes_.contains(job->view.id())) {
      continue;
    }
    bool finished = true;
    bool has_work = false;
    for (const Target& target : job->targets) {
      if (target.trials == nullptr) continue;
      finished = finished && target.trials->Finished();
      has_work = has_work || target.trials->HasWork();
    }
    if (has_work) continue;
    // RUNNING with nothing leased and nothing to lease: configs held by
    // leases that no longer exist go back to the queue.
    int64_t moved = 0;
    for (Target& target : job->targets) {
      if (target.trials == nullptr) continue;
      moved += target.trials->ReclaimOrphans([](const std::string&) { return false; });
    }
    if (!finished || moved > 0) {
      spdlog::warn("job {} had nothing leased and nothing queued; {} configs queued again",
                   job->view.id(), moved);
      metrics_->StrandedJobRepaired();
      pending->work = true;
    }
    MaybeFinish(job.get(), pending);
  }
}

void JobManager::AbandonOrphans(Pending* pending) {
  for (auto& [sequence, job] : jobs_) {
    if (IsFinal(job->view.state()) || job->finishing) continue;
    bool abandoned = false;
    for (Target& target : job->targets) {
      if (target.trials == nullptr || target.trials->Finished()) continue;
      if (!target.Orphaned(!ActivePrincipals(target).empty(), clock_(),
                           options_.orphan_timeout)) {
        continue;
      }
      spdlog::warn("job {}: {}", job->view.id(), target.abandoned);
      abandoned = true;
    }
    if (!abandoned) continue;
    MaybeFinish(job.get(), pending);
    Changed(job.get());
  }
}

void JobManager::MaybeFinish(Job* job, Pending* pending) {
  if (IsFinal(job->view.state()) || job->finishing || !job->SearchesFinished()) return;
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

std::string JobManager::MissingWorkers(const Job& job) const {
  std::vector<std::string> missing;
  for (const Target& target : job.targets) {
    if (target.trials == nullptr || target.trials->Finished()) continue;
    const std::string& model = target.info.device_model();
    const std::string& toolkit = target.info.toolkit();
    if (workers_->LiveDevices(model, toolkit).empty()) {
      missing.push_back(absl::StrCat(model, " (", toolkit, ")"));
    }
  }
  return absl::StrJoin(missing, ", ");
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
  changed_cv_.SignalAll();
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
  auto job = std::make_unique<Job>();
  job->spec = WithoutContents(snapshot.spec);
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
  job->ResumeView(snapshot, clock_());
  ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_->ListTrials(snapshot.id()));
  for (const v1::StoredTarget& info : snapshot.stored.targets()) {
    Target target;
    target.info = info;
    if (!info.cached()) {
      ASSIGN_OR_RETURN(target.trials, ResumeTarget(limits_, *job->spec, info,
                                                   HistoryFor(*job->spec, info.device_model())));
      RETURN_IF_ERROR(target.RestoreSearch(trials));
    }
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
