#include "worker/worker_daemon.h"

#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/calibration.h"
#include "common/config_text.h"
#include "common/logging.h"
#include "common/tuning_key.h"
#include "spdlog/spdlog.h"

namespace tunefleet::worker {
namespace {

// What `lease` asks: its kind, or for a coordinator that predates the field,
// what its bools say.
v1::LeaseKind KindOf(const v1::Lease& lease) {
  if (lease.kind() != v1::LEASE_KIND_UNSPECIFIED) return lease.kind();
  return lease.profile()     ? v1::LEASE_KIND_PROFILE
         : lease.finalists() ? v1::LEASE_KIND_FINALISTS
                             : v1::LEASE_KIND_SEARCH;
}

const char* TrialsNoun(v1::LeaseKind kind) {
  switch (kind) {
    case v1::LEASE_KIND_FINALISTS: return "finalist(s), interleaved";
    case v1::LEASE_KIND_PROFILE: return "config(s) to profile";
    default: return "trial(s)";
  }
}

bool IsRetryable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsResourceExhausted(status) || absl::IsAborted(status);
}

// Reports every trial of the lease not in `done` as failed with `status`.
void FailAll(const v1::Lease& lease, v1::TrialStatus status, const std::string& error,
             const std::string& device_id, LeaseReporter* reporter,
             const std::set<int64_t>& done = {}) {
  for (const v1::Trial& trial : lease.trials()) {
    if (done.contains(trial.index())) continue;
    v1::TrialResult result;
    *result.mutable_config() = trial.config();
    result.set_status(status);
    result.set_error(error);
    result.set_device_id(device_id);
    reporter->Add(trial.index(), result);
  }
}

void LogTrial(int64_t index, const v1::TrialResult& result) {
  if (result.status() == v1::TRIAL_STATUS_OK) {
    const v1::Measurement& m = result.measurement();
    std::string notes;
    if (Calibrated(m.calibration_seconds())) {
      notes += fmt::format(", calibrated {:.4f} (calibration {:.2f} us)", CalibratedTime(m),
                           m.calibration_seconds() * 1e6);
    }
    if (result.cut_early()) notes += ", cut early (clearly slower than the best)";
    if (m.retaken_samples() > 0) {
      notes += fmt::format(", {} taken again at a low clock", m.retaken_samples());
    }
    if (m.low_clock_samples() > 0) {
      notes += fmt::format(", {} kept at a low clock", m.low_clock_samples());
    }
    if (m.rounds() > 0) {
      notes += fmt::format(", {} finalist rounds, CV {:.2f}%", m.rounds(), 100 * m.rounds_cv());
    }
    spdlog::info("trial {}: OK, median {:.2f} us over {} samples{}{}", index,
                 m.median_seconds() * 1e6, m.samples(),
                 m.clock_mhz() > 0 ? fmt::format(" at {:.0f} MHz", m.clock_mhz()) : "", notes);
    return;
  }
  const std::string& error = result.error();
  spdlog::info("trial {}: {} {}", index, v1::TrialStatus_Name(result.status()),
               error.substr(0, std::min<size_t>(error.find('\n'), 200)));
}

}  // namespace

WorkerDaemon::WorkerDaemon(WorkerOptions options, Coordinator* coordinator,
                           SourceCache* sources,
                           std::vector<std::unique_ptr<TrialExecutor>> executors,
                           WorkerMetrics* metrics,
                           absl::flat_hash_map<std::string, std::unique_ptr<Profiler>> profilers)
    : options_(std::move(options)),
      coordinator_(coordinator),
      sources_(sources),
      executors_(std::move(executors)),
      profilers_(std::move(profilers)),
      metrics_(metrics != nullptr ? metrics : &null_metrics_),
      heartbeat_interval_(options_.default_heartbeat_interval),
      lease_ttl_(options_.default_lease_ttl) {}

WorkerDaemon::~WorkerDaemon() {
  for (auto& executor : executors_) executor->Shutdown();
}

void WorkerDaemon::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  spdlog::info("stopping: finishing the current trial, handing back the rest");
  coordinator_->InterruptLeaseWaits();
}

bool WorkerDaemon::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

std::string WorkerDaemon::worker_id() const {
  absl::MutexLock lock(&mu_);
  return worker_id_;
}

int WorkerDaemon::leases_done() const {
  absl::MutexLock lock(&mu_);
  return leases_done_;
}

void WorkerDaemon::Backoff(absl::Duration* backoff) {
  static thread_local std::minstd_rand random(std::random_device{}());
  const double jitter = 0.5 + std::uniform_real_distribution<double>(0, 0.5)(random);
  const absl::Duration nap = *backoff * jitter;
  *backoff = std::min(*backoff * 2, options_.max_backoff);
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), nap);
}

bool WorkerDaemon::Register(const std::string& stale_id) {
  absl::MutexLock register_lock(&register_mu_);
  if (worker_id() != stale_id) return true;  // another thread re-registered
  v1::RegisterWorkerRequest request;
  request.set_host(options_.host);
  request.set_toolkit(options_.toolkit);
  request.set_version(options_.version);
  request.set_measurement_protocol(kMeasurementProtocolVersion);
  for (const auto& executor : executors_) *request.add_devices() = executor->device();
  absl::Duration backoff = options_.min_backoff;
  while (!stopping()) {
    absl::StatusOr<v1::RegisterWorkerResponse> response = coordinator_->RegisterWorker(request);
    if (response.ok()) {
      // Before any lease: no fetched copy of an unshared key is used.
      if (options_.on_unshared_artifacts) {
        const auto& keys = response->unshared_artifacts();
        options_.on_unshared_artifacts({keys.begin(), keys.end()});
      }
      absl::MutexLock lock(&mu_);
      worker_id_ = response->worker_id();
      if (response->heartbeat_interval_ms() > 0) {
        heartbeat_interval_ = absl::Milliseconds(response->heartbeat_interval_ms());
      }
      if (response->lease_ttl_ms() > 0) lease_ttl_ = absl::Milliseconds(response->lease_ttl_ms());
      SetProcessLogField("worker", worker_id_);
      spdlog::info("registered as worker {} ({} device(s), {})", worker_id_,
                   request.devices_size(), options_.toolkit);
      return true;
    }
    spdlog::warn("cannot register with the coordinator: {}", response.status().ToString());
    Backoff(&backoff);
  }
  return false;
}

void WorkerDaemon::HeartbeatLoop() {
  while (true) {
    std::string id;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), heartbeat_interval_);
      if (stopping_) return;
      id = worker_id_;
    }
    v1::HeartbeatRequest request;
    request.set_worker_id(id);
    absl::StatusOr<v1::HeartbeatResponse> response = coordinator_->Heartbeat(request);
    if ((response.ok() && response->reregister()) || absl::IsNotFound(response.status())) {
      spdlog::info("the coordinator does not know worker {}: registering again", id);
      Register(id);
    } else if (!response.ok()) {
      spdlog::debug("heartbeat failed: {}", response.status().ToString());
    } else if (options_.on_unshared_artifacts) {
      const auto& keys = response->unshared_artifacts();
      options_.on_unshared_artifacts({keys.begin(), keys.end()});
    }
  }
}

struct WorkerDaemon::Held {
  // Work is held for the pool and the device from acceptance until this
  // goes away (run or handed back).
  Held(IdleMeter* pool, IdleMeter* device) : pool_meter(pool), device_meter(device) {
    for (IdleMeter* meter : {pool_meter, device_meter}) {
      if (meter != nullptr) meter->Hold(+1);
    }
  }
  ~Held() {
    planned.reset();  // its compiles end before the work stops counting as held
    for (IdleMeter* meter : {pool_meter, device_meter}) {
      if (meter != nullptr) meter->Hold(-1);
    }
  }
  IdleMeter* const pool_meter;
  IdleMeter* const device_meter;
  v1::Lease lease;
  std::unique_ptr<LeaseReporter> reporter;
  absl::StatusOr<std::vector<v1::SourceFile>> sources;
  std::unique_ptr<TrialExecutor::Planned> planned;  // a search lease, sources resolved
};

std::optional<v1::Lease> WorkerDaemon::TakeLease(TrialExecutor* executor, int max_trials,
                                                 bool quiet, absl::Duration* backoff) {
  const std::string id = worker_id();
  v1::LeaseWorkRequest request;
  request.set_worker_id(id);
  request.set_device_id(executor->device().id());
  request.set_max_trials(max_trials);
  request.set_wait_ms(absl::ToInt64Milliseconds(options_.lease_wait));
  const absl::Time asked = absl::Now();
  absl::StatusOr<v1::LeaseWorkResponse> response = coordinator_->LeaseWork(request);
  metrics_->LeaseWaited(executor->device().id(), absl::Now() - asked,
                        response.ok() && response->has_lease());
  if (response.ok()) {
    *backoff = options_.min_backoff;
    if (!response->has_lease()) return std::nullopt;
    return response->lease();
  }
  if (quiet || stopping()) {
    spdlog::debug("no lease ahead: {}", response.status().ToString());
    return std::nullopt;
  }
  if (absl::IsNotFound(response.status()) || absl::IsFailedPrecondition(response.status())) {
    spdlog::info("lease refused ({}): registering again", response.status().ToString());
    Register(id);
  } else {
    spdlog::warn("cannot lease work: {}", response.status().ToString());
  }
  Backoff(backoff);
  return std::nullopt;
}

std::unique_ptr<WorkerDaemon::Held> WorkerDaemon::Accept(TrialExecutor* executor,
                                                         const v1::Lease& lease) {
  auto held = std::make_unique<Held>(options_.pool_meter, executor->device_meter());
  held->lease = lease;
  LeaseReporterOptions reporter_options;
  reporter_options.interval = options_.report_interval;
  {
    absl::MutexLock lock(&mu_);
    reporter_options.renew_every = lease_ttl_ / 3;
  }
  // A worker shutting down does not wait for a coordinator to come back.
  reporter_options.may_wait = [this] { return !stopping(); };
  // The worker's id at each report: a lease adopted after a coordinator
  // restart is reported under the id the worker registered with since.
  held->reporter = std::make_unique<LeaseReporter>(
      coordinator_, [this] { return worker_id(); }, lease, reporter_options);
  held->sources = sources_->Resolve(lease.sources());
  if (held->sources.ok() && KindOf(lease) == v1::LEASE_KIND_SEARCH) {
    JobContext job{lease.job_id(), lease.kernel(), *held->sources, lease.shape(), lease.seed(),
                   lease.own_build()};
    held->planned = executor->Plan(
        std::move(job), std::vector<v1::Trial>(lease.trials().begin(), lease.trials().end()));
  }
  return held;
}

void WorkerDaemon::LeaseLoop(TrialExecutor* executor) {
  absl::Duration backoff = options_.min_backoff;
  std::unique_ptr<Held> next;
  executor->StartSpareChild();  // ready before the first lease arrives
  while (!stopping()) {
    std::unique_ptr<Held> current = std::move(next);
    if (current == nullptr) {
      std::optional<v1::Lease> lease =
          TakeLease(executor, options_.max_trials, /*quiet=*/false, &backoff);
      if (stopping()) break;  // a lease won now would only be handed back
      if (!lease.has_value()) continue;
      current = Accept(executor, *lease);
    }
    // The next lease is asked for and its compiles start while this one runs.
    std::thread ahead;
    if (options_.lookahead_trials > 0 && KindOf(current->lease) == v1::LEASE_KIND_SEARCH) {
      ahead = std::thread([&] {
        absl::Duration quiet_backoff = options_.min_backoff;
        std::optional<v1::Lease> lease =
            TakeLease(executor, options_.lookahead_trials, /*quiet=*/true, &quiet_backoff);
        if (lease.has_value()) next = Accept(executor, *lease);
      });
    }
    Serve(executor, current.get());
    current.reset();
    if (ahead.joinable()) ahead.join();
  }
  // A lease held ahead and never run goes back (its reporter releases it).
  next.reset();
}

void WorkerDaemon::Serve(TrialExecutor* executor, Held* held) {
  const v1::Lease& lease = held->lease;
  LeaseReporter& reporter = *held->reporter;
  const std::string& device_id = executor->device().id();
  const LogFields fields{{"job_id", lease.job_id()},
                         {"kernel", lease.kernel().name()},
                         {"lease", lease.lease_id()},
                         {"device", device_id}};
  spdlog::info("lease {} (epoch {}): {} {} of {} for job {} on {}", lease.lease_id(),
               lease.epoch(), lease.trials_size(), TrialsNoun(KindOf(lease)),
               lease.kernel().name(), lease.job_id(), device_id);
  bool release = false;
  int reported = 0;
  if (!held->sources.ok()) {
    spdlog::error("lease {}: cannot fetch sources: {}", lease.lease_id(),
                  held->sources.status().ToString());
    release = IsRetryable(held->sources.status());
    if (!release) {
      FailAll(lease, v1::TRIAL_STATUS_COMPILE_ERROR,
              absl::StrCat("cannot fetch the sources: ", held->sources.status().message()),
              device_id, &reporter);
    }
  } else {
    std::set<int64_t> done;
    auto on_result = [&](int64_t index, const v1::TrialResult& result) {
      LogTrial(index, result);
      metrics_->TrialFinished(device_id, result);
      reporter.Add(index, result);
      done.insert(index);
      ++reported;
    };
    auto should_stop = [&] { return stopping() || reporter.cancelled(); };
    absl::Status status;
    const v1::LeaseKind kind = KindOf(lease);
    if (kind == v1::LEASE_KIND_PROFILE) {
      JobContext job{lease.job_id(), lease.kernel(), *held->sources, lease.shape(),
                     lease.seed(),
                   lease.own_build()};
      reported = ServeProfiles(*executor, job, lease, &reporter);
    } else if (kind == v1::LEASE_KIND_FINALISTS) {
      // A finalists lease reports every finalist after its last round; the
      // same reporter, the same release rule (an interrupted round reports
      // nothing and hands the whole lease back).
      JobContext job{lease.job_id(), lease.kernel(), *held->sources, lease.shape(),
                     lease.seed(),
                   lease.own_build()};
      std::vector<v1::Trial> trials(lease.trials().begin(), lease.trials().end());
      status = executor->RunFinalists(job, trials, on_result, should_stop);
    } else {
      status = executor->Run(held->planned.get(), on_result, should_stop,
                             [&] { return reporter.best_seconds(); });
    }
    metrics_->ChildStarts(device_id, executor->child_starts());
    if (!status.ok()) {
      spdlog::error("lease {}: the worker cannot run trials: {}", lease.lease_id(),
                    status.ToString());
    }
    if (!status.ok() && !IsRetryable(status) && !stopping()) {
      // The job itself cannot be served here (e.g. a bad spec): handing the
      // lease back would only bring it back. Its trials fail with the reason.
      FailAll(lease, v1::TRIAL_STATUS_COMPILE_ERROR,
              absl::StrCat("the worker cannot run this job: ", status.message()), device_id,
              &reporter, done);
      reported = lease.trials_size();
    }
    release = reported < lease.trials_size();
    if (!status.ok() && !stopping()) {
      absl::Duration pause = options_.min_backoff * 4;
      Backoff(&pause);  // do not spin on leases this host cannot serve
    }
  }
  absl::Status finished = reporter.Finish(release);
  if (!finished.ok()) {
    spdlog::warn("lease {}: results not delivered: {}", lease.lease_id(), finished.ToString());
  }
  absl::MutexLock lock(&mu_);
  ++leases_done_;
}

// A profile's answer travels as an OK trial result carrying it; nothing is
// measured, so no trial metric counts it.
int WorkerDaemon::ServeProfiles(const TrialExecutor& executor, const JobContext& job,
                                const v1::Lease& lease, LeaseReporter* reporter) {
  auto found = profilers_.find(executor.device().id());
  Profiler* profiler = found == profilers_.end() ? nullptr : found->second.get();
  auto should_stop = [&] { return stopping() || reporter->cancelled(); };
  int reported = 0;
  for (const v1::Trial& trial : lease.trials()) {
    if (should_stop()) break;
    v1::TrialResult result;
    *result.mutable_config() = trial.config();
    result.set_status(v1::TRIAL_STATUS_OK);
    result.set_device_id(executor.device().id());
    if (profiler != nullptr) {
      *result.mutable_profile() = profiler->Profile(job, trial, should_stop);
    } else {
      result.mutable_profile()->set_device_id(executor.device().id());
      result.mutable_profile()->set_unavailable("profiling is not set up on this worker");
    }
    spdlog::info("profile of {}: {}", ConfigToString(trial.config()),
                 result.profile().unavailable().empty() ? "read" : result.profile().unavailable());
    reporter->Add(trial.index(), result);
    ++reported;
  }
  return reported;
}

void WorkerDaemon::DrainWatchdog() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&stopping_));
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return loops_running_ == 0; };
  if (mu_.AwaitWithTimeout(absl::Condition(&drained), options_.drain_time)) return;
  spdlog::warn("drain time ({}) is over: killing the benchmark children",
               absl::FormatDuration(options_.drain_time));
  for (auto& executor : executors_) executor->Interrupt();
}

void WorkerDaemon::Run() {
  if (!Register(/*stale_id=*/"")) return;
  std::thread heartbeat([this] { HeartbeatLoop(); });
  {
    absl::MutexLock lock(&mu_);
    loops_running_ = static_cast<int>(executors_.size());
  }
  std::thread watchdog([this] { DrainWatchdog(); });
  std::vector<std::thread> loops;
  for (auto& executor : executors_) {
    loops.emplace_back([this, e = executor.get()] {
      LeaseLoop(e);
      absl::MutexLock lock(&mu_);
      --loops_running_;
    });
  }
  for (std::thread& loop : loops) loop.join();
  heartbeat.join();
  watchdog.join();
  for (auto& executor : executors_) executor->Shutdown();
}

}  // namespace tunefleet::worker
