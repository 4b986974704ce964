#include "server/job_manager.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/config_text.h"
#include "common/sha256.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "common/tuning_key.h"

namespace tunefleet::server {
namespace {

constexpr size_t kTopTrialsPerTarget = 5;

std::string NewJobId(absl::Time now) {
  static std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("j%x%04x", absl::ToUnixMillis(now),
                         static_cast<unsigned>(rng() & 0xffff));
}

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

v1::TrialSummary Summary(const v1::TrialResult& result,
                         const std::string& model) {
  v1::TrialSummary summary;
  summary.set_config_text(ConfigToString(result.config()));
  summary.set_median_seconds(result.measurement().median_seconds());
  summary.set_status(result.status());
  summary.set_device_model(model);
  return summary;
}

std::optional<uint64_t> DefaultOrdinal(const v1::KernelSpec& spec,
                                       const ConfigSpace& space) {
  absl::StatusOr<v1::Config> config = ParseConfig(spec.default_config());
  if (!config.ok()) return std::nullopt;
  absl::StatusOr<v1::Config> normalized = NormalizeConfig(spec, *config);
  if (!normalized.ok()) return std::nullopt;
  absl::StatusOr<uint64_t> ordinal = space.OrdinalOf(*normalized);
  if (!ordinal.ok()) return std::nullopt;
  return *ordinal;
}

// The options of the job's strategy over `space`.
absl::StatusOr<StrategyOptions> StrategyFor(const v1::JobSpec& spec,
                                            ConfigSpace* space,
                                            int64_t max_trials) {
  StrategyOptions options;
  options.name = spec.strategy().empty() ? "exhaustive" : spec.strategy();
  options.budget = spec.budget() > 0 ? spec.budget() : 64;
  options.seed = spec.seed();
  options.max_trials = max_trials;
  options.default_ordinal = DefaultOrdinal(spec.kernel(), *space);
  if (spec.config_set().empty()) return options;
  for (const v1::ConfigSet& set : spec.kernel().config_sets()) {
    if (set.name() != spec.config_set()) continue;
    for (const std::string& text : set.configs()) {
      ASSIGN_OR_RETURN(v1::Config config, ParseConfig(text));
      ASSIGN_OR_RETURN(config, NormalizeConfig(spec.kernel(), config));
      ASSIGN_OR_RETURN(uint64_t ordinal, space->OrdinalOf(config));
      space->Bind(ordinal);
      const bool listed = std::find(options.only.begin(), options.only.end(), ordinal) !=
                          options.only.end();
      if (space->Valid() && !listed) options.only.push_back(ordinal);
    }
    if (options.only.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config_set ", spec.config_set(), " has no valid config"));
    }
    return options;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("kernel has no config_set named ", spec.config_set()));
}

}  // namespace

bool IsFinal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

JobManager::JobManager(const JobManagerOptions& options, Store* store,
                       WorkerRegistry* workers, Clock clock,
                       CoordinatorMetrics* metrics)
    : options_(options),
      store_(store),
      workers_(workers),
      clock_(std::move(clock)),
      metrics_(metrics != nullptr ? metrics : &null_metrics_) {
  // Epochs never repeat across coordinator restarts: a report from a lease of
  // the previous process can never match a new one.
  absl::MutexLock lock(&mu_);
  next_epoch_ = absl::ToUnixMillis(clock_()) * 1000;
}

JobManager::~JobManager() = default;

absl::Status JobManager::ValidateSpec(v1::JobSpec* spec) const {
  RETURN_IF_ERROR(Prefixed("kernel: ", ValidateKernelSpec(spec->kernel())));
  int64_t bytes = 0;
  for (v1::SourceFile& file : *spec->mutable_sources()) {
    bytes += static_cast<int64_t>(file.content().size());
    std::string digest = Sha256Hex(file.content());
    if (!file.digest().empty() && file.digest() != digest) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sources: digest of ", file.path(), " does not match its content"));
    }
    file.set_digest(digest);
  }
  if (bytes > options_.max_source_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "sources: ", bytes, " bytes, over the limit of ", options_.max_source_bytes));
  }
  for (const std::string& path : SpecFilePaths(spec->kernel())) {
    auto it = std::find_if(spec->sources().begin(), spec->sources().end(),
                           [&](const v1::SourceFile& f) { return f.path() == path; });
    if (it == spec->sources().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sources: the job does not carry ", path));
    }
  }
  ASSIGN_OR_RETURN(*spec->mutable_shape(),
                   NormalizeShape(spec->kernel(), spec->shape()));
  ASSIGN_OR_RETURN(
      std::unique_ptr<ConfigSpace> space,
      ConfigSpace::Create(spec->kernel(), spec->shape(),
                          PlaceholderLimits(spec->kernel().backend())));
  if (space->full_size() > static_cast<uint64_t>(options_.max_space_points)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the config space has ", space->full_size(), " points, over the cap of ",
        options_.max_space_points));
  }
  ASSIGN_OR_RETURN(StrategyOptions strategy,
                   StrategyFor(*spec, space.get(), options_.max_trials));
  return MakeStrategy(space.get(), strategy).status();
}

absl::StatusOr<JobManager::Target> JobManager::MakeTarget(
    const Job& job, const WorkerDevice& device, bool allow_cached) {
  Target target;
  target.info.set_device_model(device.device.model());
  target.info.set_toolkit(device.toolkit);
  *target.info.mutable_limits() = device.device.limits();
  std::vector<v1::SourceFile> sources(job.spec.sources().begin(),
                                      job.spec.sources().end());
  target.info.set_tuning_key(ComputeTuningKey(
      {&job.spec.kernel(), &sources, job.spec.shape(), device.device.model(),
       device.toolkit}));
  if (allow_cached && !job.spec.force_retune()) {
    absl::StatusOr<BestRecord> best = store_->GetBest(target.info.tuning_key());
    if (best.ok()) {
      target.info.set_cached(true);
      target.info.mutable_best()->set_config_text(best->config);
      target.info.mutable_best()->set_median_seconds(best->median_seconds);
      ASSIGN_OR_RETURN(*target.info.mutable_best()->mutable_config(),
                       ParseConfig(best->config));
      target.finished = true;
      return target;
    }
    if (best.status().code() != absl::StatusCode::kNotFound) return best.status();
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ConfigSpace> space,
                   ConfigSpace::Create(job.spec.kernel(), job.spec.shape(),
                                       LimitsFromDevice(device.device)));
  const std::string on_model = absl::StrCat("on ", device.device.model(), ": ");
  absl::StatusOr<StrategyOptions> strategy_options =
      StrategyFor(job.spec, space.get(), options_.max_trials);
  if (!strategy_options.ok()) return Prefixed(on_model, strategy_options.status());
  absl::StatusOr<std::unique_ptr<SearchStrategy>> strategy =
      MakeStrategy(space.get(), *strategy_options);
  if (!strategy.ok()) return Prefixed(on_model, strategy.status());
  target.trials = std::make_unique<TargetTrials>(
      std::move(space), *std::move(strategy), options_.max_lease_attempts,
      strategy_options->default_ordinal, options_.finalists);
  return target;
}

absl::Status JobManager::BindTargets(Job* job) {
  const std::string& wanted = job->spec.device_model();
  absl::Status first_error;
  for (const WorkerDevice& device :
       workers_->LiveModels(job->spec.kernel().backend())) {
    if (!wanted.empty() && device.device.model() != wanted) continue;
    bool bound = std::any_of(job->targets.begin(), job->targets.end(), [&](const Target& t) {
      return t.info.device_model() == device.device.model() &&
             t.info.toolkit() == device.toolkit;
    });
    if (bound) continue;
    absl::StatusOr<Target> target = MakeTarget(*job, device, /*allow_cached=*/true);
    if (!target.ok()) {
      if (first_error.ok()) first_error = target.status();
      continue;
    }
    job->targets.push_back(*std::move(target));
  }
  if (job->targets.empty()) {
    job->view.set_reason(
        !first_error.ok()
            ? std::string(first_error.message())
            : absl::StrCat("waiting for a worker with a ",
                           v1::Backend_Name(job->spec.kernel().backend()), " device",
                           wanted.empty() ? "" : absl::StrCat(" of model ", wanted)));
    return first_error;
  }
  if (job->view.state() == v1::JOB_STATE_QUEUED) job->view.set_reason("");
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> JobManager::Submit(const v1::JobSpec& request) {
  auto job = std::make_unique<Job>();
  job->spec = request;
  // The expensive checks (hashing, counting the space) run before the lock.
  absl::Status valid = ValidateSpec(&job->spec);
  absl::MutexLock lock(&mu_);
  if (!valid.ok()) {
    metrics_->JobSubmitted(CoordinatorMetrics::Submission::kRejected);
    return valid;
  }
  const absl::Time now = clock_();
  do {
    job->view.set_id(NewJobId(now));
  } while (jobs_.contains(job->view.id()));
  job->view.set_state(v1::JOB_STATE_QUEUED);
  job->view.set_created_unix_ms(absl::ToUnixMillis(now));
  job->view.set_updated_unix_ms(absl::ToUnixMillis(now));
  absl::Status bound = BindTargets(job.get());
  const bool waiting = workers_->LiveModels(job->spec.kernel().backend()).empty();
  if (!bound.ok() && !waiting) {
    // Every live model refused the job (e.g. no valid config under its limits).
    metrics_->JobSubmitted(CoordinatorMetrics::Submission::kRejected);
    return bound;
  }
  MaybeFinish(job.get());
  RETURN_IF_ERROR(Persist(*job));  // nothing is published unless stored
  for (const v1::SourceFile& file : job->spec.sources()) {
    blobs_[file.digest()] = file.content();
  }
  latest_spec_[job->spec.kernel().name()] = job->spec;
  Job* raw = job.get();
  job_order_.push_back(raw->view.id());
  jobs_[raw->view.id()] = std::move(job);
  metrics_->JobStateChanged(v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_QUEUED);
  if (raw->view.state() != v1::JOB_STATE_QUEUED) {
    metrics_->JobStateChanged(v1::JOB_STATE_QUEUED, raw->view.state());
  }
  metrics_->JobSubmitted(raw->view.state() == v1::JOB_STATE_SUCCEEDED
                             ? CoordinatorMetrics::Submission::kCached
                             : CoordinatorMetrics::Submission::kAccepted);
  work_cv_.SignalAll();
  return View(*raw);
}

v1::Job JobManager::View(const Job& job) const {
  v1::Job view = job.view;
  view.set_kernel_name(job.spec.kernel().name());
  *view.mutable_shape() = job.spec.shape();
  view.set_strategy(job.spec.config_set().empty()
                        ? (job.spec.strategy().empty() ? "exhaustive" : job.spec.strategy())
                        : absl::StrCat("config_set:", job.spec.config_set()));
  if (!job.targets.empty()) {
    view.clear_targets();
    view.clear_outcomes();
    view.clear_top_trials();
    view.set_trials_total(0);
    view.set_trials_done(0);
  }
  std::map<int, int64_t> outcomes;
  for (const Target& target : job.targets) {
    v1::Target* info = view.add_targets();
    *info = target.info;
    if (target.trials == nullptr) continue;
    const TargetTrials& trials = *target.trials;
    info->set_trials_total(trials.total());
    info->set_trials_done(trials.done());
    view.set_trials_total(view.trials_total() + trials.total());
    view.set_trials_done(view.trials_done() + trials.done());
    for (const auto& [status, count] : trials.outcome_counts()) outcomes[status] += count;
    if (trials.default_seconds()) info->set_default_seconds(*trials.default_seconds());
    std::vector<TrialOutcome> fastest = trials.Fastest(kTopTrialsPerTarget);
    if (!fastest.empty()) {
      v1::Best* best = info->mutable_best();
      *best->mutable_config() = fastest[0].result.config();
      best->set_config_text(ConfigToString(fastest[0].result.config()));
      best->set_median_seconds(fastest[0].result.measurement().median_seconds());
    }
    for (const TrialOutcome& outcome : fastest) {
      *view.add_top_trials() = Summary(outcome.result, target.info.device_model());
    }
  }
  for (const auto& [status, count] : outcomes) {
    v1::StatusCount* entry = view.add_outcomes();
    entry->set_status(static_cast<v1::TrialStatus>(status));
    entry->set_count(count);
  }
  std::stable_sort(view.mutable_top_trials()->begin(), view.mutable_top_trials()->end(),
                   [](const auto& a, const auto& b) {
                     return a.median_seconds() < b.median_seconds();
                   });
  return view;
}

absl::StatusOr<v1::Job> JobManager::Get(const std::string& job_id) {
  absl::ReaderMutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  return View(*it->second);
}

std::vector<v1::Job> JobManager::List(int limit) {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<v1::Job> out;
  for (auto it = job_order_.rbegin(); it != job_order_.rend(); ++it) {
    if (static_cast<int>(out.size()) >= limit) break;
    out.push_back(View(*jobs_.at(*it)));
  }
  return out;
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  Job* job = it->second.get();
  if (!IsFinal(job->view.state())) {
    for (auto lease = leases_.begin(); lease != leases_.end();) {
      auto next = std::next(lease);
      if (lease->second.job_id == job_id) leases_.erase(lease);
      lease = next;
    }
    SetState(job, v1::JOB_STATE_CANCELLED, "cancelled by a client");
    RETURN_IF_ERROR(Persist(*job));
  }
  return View(*job);
}

absl::StatusOr<v1::Job> JobManager::WaitForChange(const std::string& job_id,
                                                  int64_t* version,
                                                  absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  while (true) {
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return absl::NotFoundError(absl::StrCat("no job ", job_id));
    if (it->second->version != *version || absl::Now() >= deadline) {
      *version = it->second->version;
      return View(*it->second);
    }
    changed_cv_.WaitWithDeadline(&mu_, deadline);
  }
}

void JobManager::OnWorkerRegistered() {
  absl::MutexLock lock(&mu_);
  for (const std::string& id : job_order_) {
    Job* job = jobs_.at(id).get();
    if (IsFinal(job->view.state())) continue;
    const size_t before = job->targets.size();
    BindTargets(job).IgnoreError();  // the reason is in the job's view
    if (job->targets.size() != before) {
      MaybeFinish(job);
      Changed(job);
      Persist(*job).IgnoreError();
    }
  }
  work_cv_.SignalAll();
}

absl::StatusOr<std::optional<v1::Lease>> JobManager::LeaseWork(
    const v1::LeaseWorkRequest& request) {
  ASSIGN_OR_RETURN(WorkerDevice device,
                   workers_->FindDevice(request.worker_id(), request.device_id()));
  const int max = request.max_trials() > 0 ? request.max_trials() : options_.batch_size;
  const absl::Time deadline =
      absl::Now() + std::min(absl::Milliseconds(std::max<int64_t>(0, request.wait_ms())),
                             options_.max_long_poll);
  absl::MutexLock lock(&mu_);
  while (true) {
    if (stopping_) return absl::UnavailableError("the coordinator is shutting down");
    workers_->Touch(request.worker_id());
    ExpireLeases();
    std::optional<v1::Lease> lease = TryLease(device, max);
    if (lease.has_value() || absl::Now() >= deadline) return lease;
    work_cv_.WaitWithDeadline(&mu_, std::min(deadline, absl::Now() + absl::Seconds(1)));
  }
}

std::optional<v1::Lease> JobManager::TryLease(const WorkerDevice& device, int max) {
  for (const std::string& id : job_order_) {
    Job* job = jobs_.at(id).get();
    if (IsFinal(job->view.state())) continue;
    for (int t = 0; t < static_cast<int>(job->targets.size()); ++t) {
      Target& target = job->targets[t];
      if (target.trials == nullptr || !target.trials->HasWork() ||
          target.info.device_model() != device.device.model() ||
          target.info.toolkit() != device.toolkit) {
        continue;
      }
      Lease lease;
      lease.id = absl::StrCat("l", next_lease_++);
      lease.epoch = next_epoch_++;
      lease.ordinals = target.trials->Take(max, lease.id, lease.epoch, &lease.finalists);
      if (lease.ordinals.empty()) {
        MaybeFinish(job);  // a restored target may turn out to be complete
        continue;
      }
      lease.worker_id = device.worker_id;
      lease.job_id = id;
      lease.target = t;
      lease.expires = clock_() + options_.lease_ttl;
      v1::Lease out;
      out.set_lease_id(lease.id);
      out.set_epoch(lease.epoch);
      out.set_expires_unix_ms(absl::ToUnixMillis(lease.expires));
      out.set_job_id(id);
      *out.mutable_kernel() = job->spec.kernel();
      for (const v1::SourceFile& file : job->spec.sources()) {
        v1::SourceFile* ref = out.add_sources();
        ref->set_path(file.path());
        ref->set_digest(file.digest());
      }
      *out.mutable_shape() = job->spec.shape();
      out.set_seed(job->spec.seed());
      out.set_tuning_key(target.info.tuning_key());
      out.set_finalists(lease.finalists);
      for (uint64_t ordinal : lease.ordinals) {
        v1::Trial* trial = out.add_trials();
        trial->set_index(static_cast<int64_t>(ordinal));
        *trial->mutable_config() = target.trials->space()->ConfigAt(ordinal);
      }
      metrics_->LeaseGranted(static_cast<int>(lease.ordinals.size()));
      leases_[lease.id] = std::move(lease);
      if (job->view.state() == v1::JOB_STATE_QUEUED) {
        SetState(job, v1::JOB_STATE_RUNNING, "");
        Persist(*job).IgnoreError();
      }
      return out;
    }
  }
  return std::nullopt;
}

absl::StatusOr<v1::ReportResultsResponse> JobManager::ReportResults(
    const v1::ReportResultsRequest& request) {
  workers_->Touch(request.worker_id());
  absl::MutexLock lock(&mu_);
  v1::ReportResultsResponse response;
  auto it = leases_.find(request.lease_id());
  if (it == leases_.end() || it->second.epoch != request.epoch() ||
      it->second.worker_id != request.worker_id()) {
    response.set_cancelled(true);  // expired, cancelled, or never ours
    return response;
  }
  Lease& lease = it->second;
  Job* job = jobs_.at(lease.job_id).get();
  for (const v1::ReportedTrial& trial : request.trials()) {
    const auto ordinal = static_cast<uint64_t>(trial.index());
    auto pos = std::find(lease.ordinals.begin(), lease.ordinals.end(), ordinal);
    if (pos == lease.ordinals.end()) continue;  // duplicate or not in lease
    RETURN_IF_ERROR(RecordResult(job, lease.target, ordinal, lease, trial.result()));
    lease.ordinals.erase(pos);
  }
  lease.expires = clock_() + options_.lease_ttl;
  response.set_expires_unix_ms(absl::ToUnixMillis(lease.expires));
  if (request.release()) ReleaseLease(&lease, /*expired=*/false);
  if (lease.ordinals.empty() || request.release()) leases_.erase(it);
  MaybeFinish(job);
  Changed(job);
  return response;
}

absl::Status JobManager::RecordResult(Job* job, int target_index, uint64_t ordinal,
                                      const Lease& lease,
                                      const v1::TrialResult& reported) {
  Target& target = job->targets[target_index];
  v1::TrialResult result = reported;
  *result.mutable_config() = target.trials->space()->ConfigAt(ordinal);
  if (result.status() == v1::TRIAL_STATUS_UNSPECIFIED) {
    result.set_status(v1::TRIAL_STATUS_CRASHED);
    result.set_error("the worker reported no status");
  }
  if (lease.finalists) {
    // The first round's row stays; the final measurement ranks the config.
    target.trials->Complete(ordinal, lease.id, lease.epoch, result);
    return absl::OkStatus();
  }
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(store_->InsertTrial(TrialRow(*job, target, lease.worker_id, result)).status());
  metrics_->StoreCall(absl::Now() - start);
  if (target.trials->Complete(ordinal, lease.id, lease.epoch, result)) {
    metrics_->TrialRecorded(result.status());
  }
  return absl::OkStatus();
}

void JobManager::ReleaseLease(Lease* lease, bool expired) {
  auto job_it = jobs_.find(lease->job_id);
  if (job_it == jobs_.end()) return;
  Job* job = job_it->second.get();
  Target& target = job->targets[lease->target];
  for (uint64_t ordinal : lease->ordinals) {
    std::optional<v1::TrialResult> lost =
        target.trials->Release(ordinal, lease->id, lease->epoch, expired);
    if (!lost.has_value()) continue;
    store_->InsertTrial(TrialRow(*job, target, lease->worker_id, *lost)).IgnoreError();
    metrics_->TrialRecorded(lost->status());
  }
  lease->ordinals.clear();
  work_cv_.SignalAll();
}

void JobManager::ExpireLeases() {
  const absl::Time now = clock_();
  for (auto it = leases_.begin(); it != leases_.end();) {
    auto next = std::next(it);
    if (it->second.expires < now) {
      metrics_->LeaseExpired();
      const std::string job_id = it->second.job_id;
      ReleaseLease(&it->second, /*expired=*/true);
      leases_.erase(it);
      Job* job = jobs_.at(job_id).get();
      MaybeFinish(job);
      Changed(job);
    }
    it = next;
  }
}

void JobManager::RenewLeases(const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  const absl::Time expires = clock_() + options_.lease_ttl;
  for (auto& [id, lease] : leases_) {
    if (lease.worker_id == worker_id) lease.expires = expires;
  }
}

void JobManager::Tick() {
  std::vector<v1::WorkerInfo> workers = workers_->List();
  metrics_->WorkersAlive(static_cast<int>(std::count_if(
      workers.begin(), workers.end(), [](const v1::WorkerInfo& w) { return w.alive(); })));
  absl::MutexLock lock(&mu_);
  ExpireLeases();
  // Only jobs whose best config did not reach the store need another try.
  std::vector<std::string> retry(unstored_best_.begin(), unstored_best_.end());
  for (const std::string& id : retry) {
    Job* job = jobs_.at(id).get();
    MaybeFinish(job);
    if (IsFinal(job->view.state())) unstored_best_.erase(id);
  }
}

void JobManager::Shutdown() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  work_cv_.SignalAll();
  changed_cv_.SignalAll();
}

void JobManager::MaybeFinish(Job* job) {
  if (IsFinal(job->view.state()) || job->targets.empty()) return;
  for (const Target& target : job->targets) {
    if (target.trials != nullptr && !target.trials->Finished()) return;
  }
  std::vector<std::string> failed;
  std::vector<double> speedups;
  int succeeded = 0;
  for (Target& target : job->targets) {
    if (target.trials == nullptr) {
      ++succeeded;  // answered from the store
      continue;
    }
    std::vector<TrialOutcome> best = target.trials->Fastest(1);
    if (best.empty()) {
      failed.push_back(absl::StrCat("no config passed on ", target.info.device_model(),
                                    " (first failure: ", target.trials->first_error(), ")"));
      continue;
    }
    ++succeeded;
    // A best config that did not reach the store keeps the job open; Tick
    // tries again (the upsert is idempotent).
    if (!store_->UpsertBest(BestFor(*job, target, best[0])).ok()) {
      unstored_best_.insert(job->view.id());
      return;
    }
    if (std::optional<double> def = target.trials->default_seconds()) {
      speedups.push_back(*def / best[0].result.measurement().median_seconds());
    }
  }
  for (double speedup : speedups) metrics_->SpeedupObserved(speedup);
  SetState(job, succeeded > 0 ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_FAILED,
           absl::StrJoin(failed, "; "));
  Persist(*job).IgnoreError();  // Recover re-derives the state from the trials
}

TrialRecord JobManager::TrialRow(const Job& job, const Target& target,
                                 const std::string& worker_id,
                                 const v1::TrialResult& result) const {
  TrialRecord record;
  record.job_id = job.view.id();
  record.tuning_key = target.info.tuning_key();
  record.config = ConfigToString(result.config());
  record.status = result.status();
  record.median_seconds = result.measurement().median_seconds();
  record.p20_seconds = result.measurement().p20_seconds();
  record.p80_seconds = result.measurement().p80_seconds();
  record.samples = result.measurement().samples();
  record.compile_seconds = result.compile_seconds();
  record.worker_id = worker_id;
  record.device_id = result.device_id();
  record.error = result.error();
  record.finished_unix_ms = absl::ToUnixMillis(clock_());
  return record;
}

BestRecord JobManager::BestFor(const Job& job, const Target& target,
                               const TrialOutcome& best) const {
  BestRecord record;
  record.tuning_key = target.info.tuning_key();
  record.kernel_name = job.spec.kernel().name();
  record.shape = ShapeToString(job.spec.shape());
  record.device_model = target.info.device_model();
  record.toolkit = target.info.toolkit();
  record.config = ConfigToString(best.result.config());
  record.median_seconds = best.result.measurement().median_seconds();
  record.job_id = job.view.id();
  record.updated_unix_ms = absl::ToUnixMillis(clock_());
  return record;
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

absl::Status JobManager::Persist(const Job& job) {
  JobRecord record;
  record.id = job.view.id();
  record.kernel_name = job.spec.kernel().name();
  record.state = job.view.state();
  record.reason = job.view.reason();
  record.spec = job.spec.SerializeAsString();
  record.targets = View(job).SerializeAsString();
  record.created_unix_ms = job.view.created_unix_ms();
  record.updated_unix_ms = job.view.updated_unix_ms();
  return store_->PutJob(record);
}

absl::StatusOr<std::string> JobManager::GetBlob(const std::string& digest) {
  absl::ReaderMutexLock lock(&mu_);
  auto it = blobs_.find(digest);
  if (it == blobs_.end()) return absl::NotFoundError(absl::StrCat("no blob ", digest));
  return it->second;
}

absl::StatusOr<v1::JobSpec> JobManager::LatestSpec(const std::string& kernel_name) {
  absl::ReaderMutexLock lock(&mu_);
  auto it = latest_spec_.find(kernel_name);
  if (it == latest_spec_.end()) {
    return absl::NotFoundError(
        absl::StrCat("kernel ", kernel_name, " was never submitted here"));
  }
  return it->second;
}

absl::Status JobManager::Recover() {
  ASSIGN_OR_RETURN(std::vector<JobRecord> records,
                   store_->ListJobs(/*unfinished_only=*/false, /*limit=*/100000));
  absl::MutexLock lock(&mu_);
  // ListJobs is newest first; rebuild in submission order.
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    absl::Status restored = RestoreJob(*it);
    if (restored.ok()) continue;
    // One job that cannot be resumed (a corrupt row, caps lowered since)
    // must not keep the coordinator from starting: it fails with the reason.
    JobRecord failed = *it;
    failed.state = v1::JOB_STATE_FAILED;
    failed.reason = absl::StrCat("cannot be resumed after a restart: ", restored.message());
    store_->PutJob(failed).IgnoreError();
    RestoreJob(failed).IgnoreError();  // final now: shown, never resumed
  }
  return absl::OkStatus();
}

absl::Status JobManager::RestoreJob(const JobRecord& record) {
  auto job = std::make_unique<Job>();
  if (!job->spec.ParseFromString(record.spec) ||
      !job->view.ParseFromString(record.targets)) {
    return absl::DataLossError(absl::StrCat("job ", record.id, " cannot be parsed"));
  }
  // The row's own columns are the truth; the snapshot may be older.
  job->view.set_state(static_cast<v1::JobState>(record.state));
  job->view.set_reason(record.reason);
  for (const v1::SourceFile& file : job->spec.sources()) {
    blobs_[file.digest()] = file.content();
  }
  latest_spec_[job->spec.kernel().name()] = job->spec;
  if (!IsFinal(job->view.state())) {
    ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store_->ListTrials(record.id));
    for (const v1::Target& info : job->view.targets()) {
      WorkerDevice device;
      device.device.set_model(info.device_model());
      *device.device.mutable_limits() = info.limits();
      device.toolkit = info.toolkit();
      Target target;
      if (!info.cached()) {
        ASSIGN_OR_RETURN(target, MakeTarget(*job, device, /*allow_cached=*/false));
      }
      target.info = info;
      for (const TrialRecord& trial : trials) {
        if (target.trials == nullptr || trial.tuning_key != info.tuning_key()) continue;
        ASSIGN_OR_RETURN(v1::Config config, ParseConfig(trial.config));
        ASSIGN_OR_RETURN(uint64_t ordinal, target.trials->space()->OrdinalOf(config));
        v1::TrialResult result;
        *result.mutable_config() = config;
        result.set_status(static_cast<v1::TrialStatus>(trial.status));
        result.mutable_measurement()->set_median_seconds(trial.median_seconds);
        result.mutable_measurement()->set_p20_seconds(trial.p20_seconds);
        result.mutable_measurement()->set_p80_seconds(trial.p80_seconds);
        result.mutable_measurement()->set_samples(trial.samples);
        result.set_error(trial.error);
        target.trials->Restore(ordinal, result);
      }
      job->targets.push_back(std::move(target));
    }
  }
  Job* raw = job.get();
  job_order_.push_back(record.id);
  jobs_[record.id] = std::move(job);
  metrics_->JobStateChanged(v1::JOB_STATE_UNSPECIFIED, raw->view.state());
  MaybeFinish(raw);
  return absl::OkStatus();
}

}  // namespace tunefleet::server
