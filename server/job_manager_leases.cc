// JobManager's lease protocol (LeaseSource): leasing trials and proposing
// compiles to the workers that ask, recording what they report, returning
// what they give back or let lapse, and the principals that take part.
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/calibration.h"
#include "common/status_macros.h"
#include "server/job_log.h"
#include "server/job_manager.h"
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

// `value` when it is a finite number of at least 0, else 0: the store keeps
// no NaN (SQLite binds it as NULL, which a NOT NULL column refuses, and with
// it the batch of every report written together).
double Sane(double value) { return std::isfinite(value) && value >= 0 ? value : 0; }

// The reported result of `ordinal` with the config as the space defines it,
// a status a worker may report (a lost worker or an unknown status reads
// CRASHED), and only numbers the store keeps. An OK result must carry what configs are
// ranked by: a finite, positive median and a calibration
// (common/calibration.h; every worker of this measurement protocol
// calibrates). Without them it is recorded CRASHED: a row with raw seconds
// would rank against the others' calibrated times, and a zero, negative or
// NaN median ahead of every real one.
v1::TrialResult Normalized(const ConfigSpace& space, uint64_t ordinal,
                           const v1::TrialResult& reported) {
  v1::TrialResult result = reported;
  *result.mutable_config() = space.ConfigAt(ordinal);
  if (result.status() == v1::TRIAL_STATUS_UNSPECIFIED) {
    result.set_status(v1::TRIAL_STATUS_CRASHED);
    result.set_error("the worker reported no status");
  } else if (result.status() == v1::TRIAL_STATUS_WORKER_LOST ||
             !v1::TrialStatus_IsValid(result.status())) {
    // The coordinator records a lost worker; a worker does not say so of
    // itself (nor with a status this coordinator does not know).
    result.set_status(v1::TRIAL_STATUS_CRASHED);
    result.set_error(absl::StrCat("the worker reported status ", reported.status(),
                                  ", which workers do not report"));
  }
  const v1::Measurement& claimed = reported.measurement();
  if (result.status() == v1::TRIAL_STATUS_OK &&
      (!std::isfinite(claimed.median_seconds()) || claimed.median_seconds() <= 0 ||
       !Calibrated(claimed.calibration_seconds()))) {
    result.set_status(v1::TRIAL_STATUS_CRASHED);
    result.set_error(absl::StrCat(
        "the worker reported OK without a valid measurement (median ", claimed.median_seconds(),
        " s, calibration ", claimed.calibration_seconds(), " s): not ranked"));
  }
  v1::Measurement* measured = result.mutable_measurement();
  measured->set_median_seconds(Sane(measured->median_seconds()));
  measured->set_p20_seconds(Sane(measured->p20_seconds()));
  measured->set_p80_seconds(Sane(measured->p80_seconds()));
  measured->set_clock_mhz(Sane(measured->clock_mhz()));
  measured->set_rounds_cv(Sane(measured->rounds_cv()));
  measured->set_calibration_seconds(Sane(measured->calibration_seconds()));
  result.set_compile_seconds(Sane(result.compile_seconds()));
  return result;
}

}  // namespace

absl::StatusOr<std::optional<LeaseGrant>> JobManager::TryLease(const LeaseQuery& query) {
  ASSIGN_OR_RETURN(WorkerRegistry::ModelOf device,
                   workers_->TouchDevice(query.worker_id, query.device_id));
  if (Refused(device.principal)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "worker principal ", device.principal,
        " is quarantined: its results disagreed with a re-measurement by another worker"));
  }
  const int max = BatchFor(query.max_trials);
  // The devices that could verify, read only for a verification: it walks
  // the fleet.
  std::optional<std::vector<LiveDevice>> live;
  Lease lease;
  lease.worker_id = query.worker_id;
  lease.device_id = device.device_id;
  lease.principal = device.principal;
  Pending pending;
  std::optional<LeaseGrant> grant;
  bool full = false;
  combiner_.Run([&] {
    mu_.AssertHeld();
    asked_[device.principal] = clock_();  // it asks for work: it takes part
    if (leases_.CountOnDevice(query.worker_id, device.device_id) >=
        std::max(1, options_.max_leases_per_device)) {
      full = true;
      return;
    }
    const auto runs_here = [&](const Target& target) {
      return target.trials != nullptr && target.info.device_model() == device.model &&
             target.info.toolkit() == device.toolkit;
    };
    // Verifications first, of any job: a candidate best waits for one (with
    // verify_best=auto it is served unverified once its wait passes), and
    // the search work of older jobs must not make it wait.
    // Spot checks too: a search's finalists round waits for its checks.
    for (auto& [sequence, job] : jobs_) {
      if (!job->Live()) continue;
      for (int t = 0; t < static_cast<int>(job->targets.size()) && !grant; ++t) {
        const Target& target = job->targets[t];
        if (!runs_here(target)) continue;
        if (target.verification != nullptr) {
          if (!live.has_value()) live = workers_->LiveDevices(device.model, device.toolkit);
          grant = VerifyFrom(job.get(), t, lease, *live, &pending);
        } else if (target.trials->HasRecheckFor(device.principal)) {
          grant = LeaseFrom(job.get(), t, lease, max, &pending);
        }
      }
      if (grant.has_value()) break;
    }
    for (auto& [sequence, job] : jobs_) {
      if (grant.has_value()) break;
      if (!job->Live()) continue;
      for (int t = 0; t < static_cast<int>(job->targets.size()) && !grant; ++t) {
        const Target& target = job->targets[t];
        if (runs_here(target) && target.verification == nullptr && target.trials->HasWork()) {
          job->targets[t].wanted_by[device.principal] = clock_();
          grant = LeaseFrom(job.get(), t, lease, max, &pending);
        }
      }
    }
  });
  if (full) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "device ", device.device_id, " of worker ", query.worker_id, " holds ",
        options_.max_leases_per_device, " leases already; report or release one first"));
  }
  if (grant.has_value()) {
    for (auto& [ordinal, config] : grant->trials) config = pending.configs->ConfigAt(ordinal);
    if (pending.receipt.has_value()) grant->receipt = options_.receipts->Seal(*pending.receipt);
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
    if (!job->Live() || job->spec->kernel().backend() != v1::BACKEND_CUDA) {
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
      auto& granted = target.compile_grants[query.worker_id];
      for (uint64_t ordinal : ordinals) {
        grant.configs.push_back(target.trials->space()->ConfigAt(ordinal));
        granted.insert(ordinal);
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
  lease.deadline = clock_() + options_.lease_max_age;
  // The lease id and epoch are the book's; Take needs them first.
  const Lease& granted = leases_.Grant(std::move(lease));
  const std::string lease_id = granted.id;
  const int64_t epoch = granted.epoch;
  ApplyTimeBudget(job);
  bool finalists = false;
  bool referee = false;
  // Spot checks first: the finalists round waits for them.
  std::vector<uint64_t> ordinals =
      target.trials->TakeRechecks(max, granted.principal, lease_id, epoch, &referee);
  const bool spot = !ordinals.empty();
  if (!spot) {
    const int allowed = ShareAllows(*job, t, granted.principal, max);
    if (allowed > 0) {
      ordinals = target.trials->Take(allowed, lease_id, epoch, &finalists,
                                     HolderOf(target, granted.principal));
    }
  }
  if (ordinals.empty()) {
    leases_.Remove(lease_id);
    MaybeFinish(job, pending);  // a restored target may turn out to be complete
    return std::nullopt;
  }
  Lease* held = leases_.Find(lease_id, epoch, granted.worker_id);
  held->ordinals = ordinals;
  held->finalists = finalists;
  held->spot = spot;
  held->referee = spot && referee;
  // Spot checks are drawn as search leases are, so own_build tells neither.
  held->own_build =
      finalists || std::bernoulli_distribution(options_.audit_build_rate)(sampler_);
  if (spot) held->idle_until = std::min(held->idle_until, clock_() + IdleLimitOf(*held));
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
  grant.own_build = lease.own_build;
  for (uint64_t ordinal : lease.ordinals) grant.trials.emplace_back(ordinal, v1::Config());
  pending->configs = target.trials->shared_space();  // built once the lock is released
  pending->receipt = ReceiptOf(*job, lease);  // sealed once the lock is released
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

// Only a plain search lease: the finalists round, verifications and spot
// checks hold state of their own round, which a restart does not keep.
std::optional<v1::LeaseReceiptBody> JobManager::ReceiptOf(const Job& job,
                                                          const Lease& lease) const {
  if (options_.receipts == nullptr || lease.finalists || lease.verify || lease.spot) {
    return std::nullopt;
  }
  v1::LeaseReceiptBody body;
  body.set_lease_id(lease.id);
  body.set_epoch(lease.epoch);
  body.set_incarnation(options_.receipts->incarnation());
  body.set_principal(lease.principal);
  body.set_device_id(lease.device_id);
  body.set_job_id(job.view.id());
  body.set_tuning_key(job.targets[lease.target].info.tuning_key());
  for (uint64_t ordinal : lease.ordinals) body.add_ordinals(ordinal);
  body.set_issued_unix_ms(absl::ToUnixMillis(clock_()));
  return body;
}

bool JobManager::ApplyTimeBudget(Job* job) {
  if (!job->ApplyTimeBudget(clock_())) return false;
  Changed(job);
  return true;
}

absl::Duration JobManager::IdleLimitOf(const Lease& lease) const {
  // A spot check, or its referee, must not hold the finalists round back:
  // one that reports nothing for a while goes to another principal.
  return lease.spot ? std::min(options_.lease_idle_limit, 4 * options_.spot.wait)
                    : options_.lease_idle_limit;
}

// Overruled first: Quarantine adds the principal to the quarantine list
// before it leaves the overruled, so one of the two answers yes throughout.
bool JobManager::Refused(const std::string& principal) {
  return Overruled(principal) || quarantine_->Contains(principal);
}

bool JobManager::Overruled(const std::string& principal) const {
  absl::ReaderMutexLock lock(&overruled_mu_);
  return overruled_.contains(principal);
}

absl::Status JobManager::RefuseQuarantined(const ResultReport& report) {
  absl::StatusOr<std::string> principal = workers_->PrincipalOf(report.worker_id);
  if (!principal.ok() || !Refused(*principal)) return absl::OkStatus();
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
  bool unknown = false;
  absl::StatusOr<ReportAck> held = ReportHeld(report, &unknown);
  if (!unknown || report.receipt.empty() || options_.receipts == nullptr) return held;
  ASSIGN_OR_RETURN(std::optional<ResultReport> adopted, Adopt(report));
  if (!adopted.has_value()) return ReportAck::Cancelled();
  ASSIGN_OR_RETURN(ReportAck ack, ReportHeld(*adopted, &unknown));
  if (!ack.cancelled) {
    ack.adopted_lease_id = adopted->lease_id;
    ack.adopted_epoch = adopted->epoch;
  }
  return ack;
}

absl::StatusOr<v1::LeaseReceiptBody> JobManager::OpenReceipt(const ResultReport& report,
                                                           const std::string& principal) {
  absl::StatusOr<v1::LeaseReceiptBody> opened = options_.receipts->Open(report.receipt);
  if (opened.ok() && opened->principal() != principal) {
    opened = absl::PermissionDeniedError(
        absl::StrCat("the lease receipt is another principal's (", opened->principal(), ")"));
  }
  if (opened.ok()) return opened;
  metrics_->ReceiptRefused();
  // At most a line every 10 s: a worker that sends refused receipts with
  // every report must not fill the log.
  int64_t suppressed = 0;
  {
    absl::MutexLock lock(&refused_mu_);
    const absl::Time now = absl::Now();
    if (now - refused_logged_ < absl::Seconds(10)) {
      ++refused_suppressed_;
      return opened.status();
    }
    refused_logged_ = now;
    suppressed = std::exchange(refused_suppressed_, 0);
  }
  spdlog::warn("worker {} ({}): lease receipt of {} refused: {}{}", report.worker_id, principal,
               report.lease_id, std::string(opened.status().message()),
               suppressed == 0 ? "" : absl::StrCat(" (and ", suppressed, " more since the last)"));
  return opened.status();
}

// The checks that need no lock first; then, under it, the job and target
// of the receipt, the configs still to be measured, and the new lease.
absl::StatusOr<std::optional<ResultReport>> JobManager::Adopt(const ResultReport& report) {
  absl::StatusOr<std::string> principal = workers_->PrincipalOf(report.worker_id);
  if (!principal.ok()) return std::nullopt;
  ASSIGN_OR_RETURN(const v1::LeaseReceiptBody body, OpenReceipt(report, *principal));
  const absl::Time issued = absl::FromUnixMillis(body.issued_unix_ms());
  // This process granted it and no longer holds it (it ended), or it is too
  // old to hold now, or the worker no longer has its device.
  if (body.incarnation() == options_.receipts->incarnation() ||
      clock_() > issued + options_.lease_max_age) {
    return std::nullopt;
  }
  absl::StatusOr<WorkerRegistry::ModelOf> device =
      workers_->TouchDevice(report.worker_id, body.device_id());
  if (!device.ok()) return std::nullopt;
  ResultReport adopted = report;
  adopted.receipt.clear();
  const std::pair<uint64_t, int64_t> granted{body.incarnation(), body.epoch()};
  absl::MutexLock lock(&mu_);
  if (auto it = adopted_.find(granted); it != adopted_.end()) {  // a retried report
    adopted.lease_id = it->second.lease_id;
    adopted.epoch = it->second.epoch;
    if (leases_.Find(adopted.lease_id, adopted.epoch, report.worker_id) == nullptr) {
      return std::nullopt;
    }
    return adopted;
  }
  Job* job = FindJob(body.job_id());
  const int t = job == nullptr || !job->Live() ? -1 : job->TargetOf(body.tuning_key());
  if (t < 0) return std::nullopt;
  Target& target = job->targets[t];
  if (target.trials == nullptr || target.verification != nullptr ||
      target.info.device_model() != device->model || target.info.toolkit() != device->toolkit ||
      leases_.CountOnDevice(report.worker_id, device->device_id) >=
          std::max(1, options_.max_leases_per_device)) {
    return std::nullopt;  // an adopted lease counts against the device's leases too
  }
  Lease lease;
  lease.worker_id = report.worker_id;
  lease.device_id = device->device_id;
  lease.principal = *principal;
  lease.job_id = body.job_id();
  lease.target = t;
  lease.expires = clock_() + options_.lease_ttl;
  lease.idle_until = clock_() + options_.lease_idle_limit;
  lease.deadline = issued + options_.lease_max_age;  // the receipt's age counts
  const Lease& granted_lease = leases_.Grant(std::move(lease));
  adopted.lease_id = granted_lease.id;
  adopted.epoch = granted_lease.epoch;
  const auto in_hand = [&report](uint64_t ordinal) {
    return std::any_of(report.trials.begin(), report.trials.end(),
                       [&](const auto& trial) { return trial.first == ordinal; });
  };
  std::vector<uint64_t> taken =
      target.trials->Adopt(std::vector<uint64_t>(body.ordinals().begin(), body.ordinals().end()),
                           in_hand, adopted.lease_id, adopted.epoch,
                           HolderOf(target, *principal));
  if (taken.empty()) {
    leases_.Remove(adopted.lease_id);
    return std::nullopt;
  }
  // A lease left with nothing goes: its worker hears `cancelled` at its
  // next report and stops measuring configs that are not its own now.
  for (const std::string& emptied : leases_.Disown(job->view.id(), t, taken, adopted.lease_id)) {
    leases_.Remove(emptied);
  }
  const int results = static_cast<int>(std::count_if(taken.begin(), taken.end(), in_hand));
  leases_.Find(adopted.lease_id, adopted.epoch, report.worker_id)->ordinals = std::move(taken);
  adopted_[granted] = Adopted{adopted.lease_id, adopted.epoch, issued};
  metrics_->LeaseAdopted(results);
  spdlog::info("job {}: lease {} (epoch {}) of another coordinator process adopted as lease {} "
               "of worker {}: {} result(s) measured meanwhile kept",
               body.job_id(), body.lease_id(), body.epoch(), adopted.lease_id, report.worker_id,
               results);
  return adopted;
}

absl::StatusOr<ReportAck> JobManager::ReportHeld(const ResultReport& report, bool* unknown) {
  workers_->Touch(report.worker_id);
  std::vector<std::pair<uint64_t, v1::TrialResult>> results;  // held by the lease
  std::vector<TrialRecord> rows;
  // The lease as it stands, its target's key and config space: the results
  // and their rows are built from them without the lock.
  std::optional<Lease> held;
  std::string tuning_key;
  std::shared_ptr<const ConfigSpace> space;
  combiner_.Run([&] {
    mu_.AssertHeld();
    Lease* lease = leases_.Find(report.lease_id, report.epoch, report.worker_id);
    if (lease == nullptr) return;
    const Target& target = FindJob(lease->job_id)->targets[lease->target];
    held = *lease;
    tuning_key = target.info.tuning_key();
    space = target.trials->shared_space();
    // The worker is alive: the lease must not expire while the rows are written.
    leases_.Renew(lease->id, clock_() + options_.lease_ttl);
  });
  if (!held.has_value()) {
    *unknown = true;
    return ReportAck::Cancelled();
  }
  for (const auto& [ordinal, result] : report.trials) {
    if (std::find(held->ordinals.begin(), held->ordinals.end(), ordinal) ==
        held->ordinals.end()) {
      continue;
    }
    results.emplace_back(ordinal, Normalized(*space, ordinal, result));
    // A verification's rows are stored once its round is judged
    // (ApplyVerification): a round released half-measured leaves none.
    if (!held->verify) {
      rows.push_back(
          TuningJob::TrialRow(held->job_id, tuning_key, *held, results.back().second, clock_()));
    }
  }
  const absl::Status written = writer_.Write(rows);
  Pending pending;
  ReportAck ack;
  bool refused = false;
  combiner_.Run([&] {
    mu_.AssertHeld();
    Lease* lease = leases_.Find(report.lease_id, report.epoch, report.worker_id);
    if (lease != nullptr && Overruled(lease->principal)) {
      // Overruled while its rows were written: its results count for nothing.
      ReturnLease(leases_.Remove(report.lease_id), /*expired=*/false, &pending);
      refused = true;
    } else if (!written.ok()) {
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
  });
  Flush(std::move(pending));
  if (refused) {
    return absl::PermissionDeniedError(
        "this worker's principal was overruled by a referee: its results are refused");
  }
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
  std::vector<RecordedResult> recorded;
  const std::vector<v1::TrialStatus> measured = target.Record(results, lease, &recorded);
  for (v1::TrialStatus status : measured) metrics_->TrialRecorded(status);
  quotas_.CountTrials(job->view.owner(), static_cast<int64_t>(measured.size()), clock_());
  if (lease->verify) ApplyVerification(results, *lease, &target, pending);
  if (lease->spot) {
    ApplySpotChecks(*job, recorded, *lease, &target, pending);
  } else if (!lease->verify && !lease->finalists) {
    SampleSpotChecks(recorded, *lease, &target, pending);
  }
  if (!results.empty()) {
    lease->idle_until = std::min(clock_() + IdleLimitOf(*lease), lease->deadline);
  }
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

bool JobManager::AnyActivePrincipal(const Target& target,
                                    const std::vector<std::string>& besides) const {
  const absl::Time since = clock_() - kActiveWindowTtls * options_.lease_ttl;
  return workers_->AnyLiveDevice(
      target.info.device_model(), target.info.toolkit(), [&](const std::string& principal) {
        if (std::find(besides.begin(), besides.end(), principal) != besides.end()) return false;
        auto asked = asked_.find(principal);
        return asked != asked_.end() && asked->second >= since &&
               !quarantine_->Contains(principal);
      });
}

int JobManager::ShareAllows(const Job& job, int t, const std::string& principal,
                            int max) const {
  const Target& target = job.targets[t];
  // Only the search: the finalists round is one lease, whatever its size.
  if (options_.max_lease_share >= 1 || target.trials->queued() == 0) return max;
  const int64_t open = std::max<int64_t>(target.trials->total() - target.trials->done(), 0);
  const int64_t share = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(options_.max_lease_share * static_cast<double>(open))));
  const int64_t held = leases_.HeldBy(job.view.id(), t, principal);
  if (held + max <= share) return max;
  // Shared only with a principal that asked for this target's work lately
  // (one busy with older jobs takes none of it) and may measure.
  const absl::Time since = clock_() - kActiveWindowTtls * options_.lease_ttl;
  const bool shared = std::any_of(
      target.wanted_by.begin(), target.wanted_by.end(), [&](const auto& entry) {
        return entry.first != principal && entry.second >= since &&
               !Overruled(entry.first) && !quarantine_->Contains(entry.first);
      });
  if (!shared) return max;
  return static_cast<int>(std::clamp<int64_t>(share - held, 0, max));
}

Holder JobManager::HolderOf(const Target& target, const std::string& principal) const {
  return Holder{principal, [this, &target](const std::vector<std::string>& besides) {
                  return AnyActivePrincipal(target, besides);
                }};
}

void JobManager::ReturnLease(const Lease& lease, bool expired, Pending* pending) {
  Job* job = FindJob(lease.job_id);
  if (job == nullptr) return;
  Target& target = job->targets[lease.target];
  if (lease.verify && target.verification != nullptr) {
    target.verification->Release(lease.id, lease.epoch);  // another verifier may take it
  }
  if (lease.spot) {
    // Its checks wait again, for another principal.
    for (uint64_t ordinal : lease.ordinals) {
      target.trials->ReleaseRecheck(ordinal, lease.id, lease.epoch, lease.principal,
                                    clock_() + options_.spot.wait);
    }
    pending->work = true;
    Changed(job);
    return;
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
  const absl::Time now = clock_();
  absl::MutexLock lock(&heard_mu_);
  heard_[worker_id] = now;
}

}  // namespace tunefleet::server
