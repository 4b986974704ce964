#include "server/prometheus_metrics.h"

#include <array>
#include <exception>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics_endpoint.h"
#include "common/status_macros.h"
#include "absl/strings/str_cat.h"

namespace tunefleet::server {
namespace {

constexpr int kJobStates = v1::JobState_ARRAYSIZE;
constexpr int kTrialStatuses = v1::TrialStatus_ARRAYSIZE;
constexpr int kStopReasons = v1::StopReason_ARRAYSIZE;
constexpr int kRetuneOutcomes = v1::RetuneOutcome_ARRAYSIZE;

// "JOB_STATE_RUNNING" -> "running".
std::string Label(const std::string& enum_name, const std::string& prefix) {
  return absl::AsciiStrToLower(enum_name.substr(prefix.size()));
}

}  // namespace

struct PrometheusMetrics::Families {
  std::array<prometheus::Counter*, 3> submitted{};
  std::array<prometheus::Gauge*, kJobStates> jobs{};
  std::array<prometheus::Counter*, kTrialStatuses> trials{};
  prometheus::Counter* leases = nullptr;
  prometheus::Counter* leased_trials = nullptr;
  prometheus::Counter* expirations = nullptr;
  prometheus::Counter* adopted_leases = nullptr;
  prometheus::Counter* adopted_results = nullptr;
  prometheus::Counter* refused_receipts = nullptr;
  prometheus::Gauge* workers = nullptr;
  prometheus::Histogram* speedup = nullptr;
  prometheus::Histogram* store_seconds = nullptr;
  prometheus::Counter* stranded = nullptr;
  prometheus::Gauge* store_up = nullptr;
  prometheus::Gauge* leading = nullptr;
  prometheus::Counter* unauthenticated = nullptr;
  prometheus::Counter* permission_denied = nullptr;
  std::array<prometheus::Counter*, 4> verifications{};
  std::array<prometheus::Counter*, 4> spot_checks{};
  std::array<prometheus::Counter*, kStopReasons> searches{};
  std::array<prometheus::Counter*, kRetuneOutcomes> retunes{};  // FIRST and UNSPECIFIED: null
  prometheus::Gauge* quarantined = nullptr;
  prometheus::Gauge* profiles_pending = nullptr;
  std::array<prometheus::Counter*, 2> profiles{};  // unavailable, read
  prometheus::Gauge* artifacts = nullptr;
  prometheus::Gauge* artifact_bytes = nullptr;
  std::array<prometheus::Counter*, 2> artifact_requests{};  // miss, hit
  prometheus::Counter* artifact_conflicts = nullptr;
  prometheus::Counter* lock_batches = nullptr;
  prometheus::Counter* lock_sections = nullptr;
  // The totals last counted, so that each call adds what grew since.
  absl::Mutex lock_mu;
  int64_t lock_batches_seen ABSL_GUARDED_BY(lock_mu) = 0;
  int64_t lock_sections_seen ABSL_GUARDED_BY(lock_mu) = 0;
  prometheus::Family<prometheus::Histogram>* store_operations = nullptr;
  prometheus::Family<prometheus::Counter>* store_errors = nullptr;
  prometheus::Family<prometheus::Histogram>* rpc_seconds = nullptr;
  prometheus::Family<prometheus::Gauge>* queued = nullptr;
  absl::Mutex queued_mu;
  // Models ever given a series: one that has no work left is set to 0.
  absl::flat_hash_set<std::string> queued_models ABSL_GUARDED_BY(queued_mu);
};

namespace {

const prometheus::Histogram::BucketBoundaries& StoreBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3};
  return *buckets;
}

// Long-polls (LeaseWork, WatchJob) last up to their deadline: the top
// buckets are for them.
const prometheus::Histogram::BucketBoundaries& RpcBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  return *buckets;
}

}  // namespace

PrometheusMetrics::PrometheusMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<Families>()) {}

PrometheusMetrics::~PrometheusMetrics() = default;

absl::StatusOr<std::unique_ptr<PrometheusMetrics>> PrometheusMetrics::Start(
    const std::string& listen, const std::string& version, const CoordinatorPools& pools) {
  std::unique_ptr<PrometheusMetrics> metrics(new PrometheusMetrics());
  prometheus::Registry& registry = *metrics->registry_;
  Families& f = *metrics->families_;
  prometheus::BuildGauge()
      .Name("tunefleet_coordinator_info")
      .Help("Build information of the coordinator; always 1")
      .Register(registry)
      .Add({{"version", version}})
      .Set(1);
  prometheus::BuildGauge()
      .Name("tunefleet_coordinator_usable_cpus")
      .Help("CPUs the coordinator may use: its affinity mask bounded by its cgroup's CPU quota")
      .Register(registry)
      .Add({})
      .Set(pools.usable_cpus);
  prometheus::BuildGauge()
      .Name("tunefleet_coordinator_report_threads")
      .Help("Threads that record reported results (--report-threads); they wait on the store")
      .Register(registry)
      .Add({})
      .Set(pools.report_threads);
  prometheus::BuildGauge()
      .Name("tunefleet_coordinator_lease_threads")
      .Help("Threads that try LeaseWork calls (--lease-threads); they wait for the job lock")
      .Register(registry)
      .Add({})
      .Set(pools.lease_threads);
  auto& submitted = prometheus::BuildCounter()
                        .Name("tunefleet_coordinator_jobs_submitted_total")
                        .Help("Jobs submitted, by result")
                        .Register(registry);
  f.submitted = {&submitted.Add({{"result", "accepted"}}), &submitted.Add({{"result", "cached"}}),
                 &submitted.Add({{"result", "rejected"}})};
  auto& jobs = prometheus::BuildGauge()
                   .Name("tunefleet_coordinator_jobs")
                   .Help("Jobs known to the coordinator, by state")
                   .Register(registry);
  for (int s = 1; s < kJobStates; ++s) {
    f.jobs[s] = &jobs.Add({{"state", Label(v1::JobState_Name(s), "JOB_STATE_")}});
  }
  auto& trials = prometheus::BuildCounter()
                     .Name("tunefleet_coordinator_trials_total")
                     .Help("Trials recorded, by outcome")
                     .Register(registry);
  for (int s = 1; s < kTrialStatuses; ++s) {
    f.trials[s] = &trials.Add({{"outcome", Label(v1::TrialStatus_Name(s), "TRIAL_STATUS_")}});
  }
  f.leases = &prometheus::BuildCounter()
                  .Name("tunefleet_coordinator_leases_total")
                  .Help("Leases granted to workers")
                  .Register(registry)
                  .Add({});
  f.leased_trials = &prometheus::BuildCounter()
                         .Name("tunefleet_coordinator_leased_trials_total")
                         .Help("Trials handed out in leases (re-leases included)")
                         .Register(registry)
                         .Add({});
  f.expirations = &prometheus::BuildCounter()
                       .Name("tunefleet_coordinator_lease_expirations_total")
                       .Help("Leases that expired before their trials were reported")
                       .Register(registry)
                       .Add({});
  auto& adopted = prometheus::BuildCounter()
                      .Name("tunefleet_coordinator_leases_adopted_total")
                      .Help("Leases another coordinator process granted, adopted from their "
                            "receipts after a restart or takeover")
                      .Register(registry);
  f.adopted_leases = &adopted.Add({});
  f.adopted_results = &prometheus::BuildCounter()
                           .Name("tunefleet_coordinator_adopted_results_total")
                           .Help("Results measured under an adopted lease before its adoption "
                                 "(kept, not measured again)")
                           .Register(registry)
                           .Add({});
  f.refused_receipts = &prometheus::BuildCounter()
                            .Name("tunefleet_coordinator_lease_receipts_refused_total")
                            .Help("Lease receipts refused: forged, altered, or another "
                                  "principal's")
                            .Register(registry)
                            .Add({});
  f.workers = &prometheus::BuildGauge()
                   .Name("tunefleet_coordinator_workers_alive")
                   .Help("Workers that heartbeated recently")
                   .Register(registry)
                   .Add({});
  f.speedup = &prometheus::BuildHistogram()
                   .Name("tunefleet_coordinator_best_speedup_ratio")
                   .Help("Best config's speed-up over the default config, per finished target")
                   .Register(registry)
                   .Add({}, prometheus::Histogram::BucketBoundaries{1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 30});
  f.store_seconds = &prometheus::BuildHistogram()
                         .Name("tunefleet_coordinator_store_write_seconds")
                         .Help("Time of trial writes to the store (one batch each)")
                         .Register(registry)
                         .Add({}, prometheus::Histogram::BucketBoundaries{
                                      0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1});
  f.stranded = &prometheus::BuildCounter()
                    .Name("tunefleet_coordinator_stranded_jobs_repaired_total")
                    .Help("Running jobs found with nothing leased and nothing queued, repaired")
                    .Register(registry)
                    .Add({});
  f.store_up = &prometheus::BuildGauge()
                    .Name("tunefleet_coordinator_store_up")
                    .Help("1 while the store answers its health check, else 0")
                    .Register(registry)
                    .Add({});
  f.store_up->Set(1);
  f.leading = &prometheus::BuildGauge()
                   .Name("tunefleet_coordinator_leading")
                   .Help("1 while this coordinator leads its database, 0 while it is a standby")
                   .Register(registry)
                   .Add({});
  auto& refused = prometheus::BuildCounter()
                      .Name("tunefleet_coordinator_calls_refused_total")
                      .Help("Calls refused before their handler, by code: no or a bad "
                            "credential, or a role that may not call the method")
                      .Register(registry);
  f.unauthenticated = &refused.Add({{"code", "UNAUTHENTICATED"}});
  f.permission_denied = &refused.Add({{"code", "PERMISSION_DENIED"}});
  auto& verifications = prometheus::BuildCounter()
                            .Name("tunefleet_coordinator_verifications_total")
                            .Help("Candidate bests' verifications, by outcome")
                            .Register(registry);
  f.verifications = {&verifications.Add({{"outcome", "agreed"}}),
                     &verifications.Add({{"outcome", "disagreed"}}),
                     &verifications.Add({{"outcome", "unverified"}}),
                     &verifications.Add({{"outcome", "disputed"}})};
  auto& spot_checks = prometheus::BuildCounter()
                          .Name("tunefleet_coordinator_spot_checks_total")
                          .Help("Spot checks of search results by another principal, by "
                                "outcome (disputed: sent to a referee)")
                          .Register(registry);
  f.spot_checks = {&spot_checks.Add({{"outcome", "agreed"}}),
                   &spot_checks.Add({{"outcome", "disputed"}}),
                   &spot_checks.Add({{"outcome", "overruled"}}),
                   &spot_checks.Add({{"outcome", "unsettled"}})};
  auto& searches = prometheus::BuildCounter()
                       .Name("tunefleet_coordinator_searches_finished_total")
                       .Help("Jobs whose search ended, by why it stopped")
                       .Register(registry);
  for (int r = 1; r < kStopReasons; ++r) {
    f.searches[r] = &searches.Add({{"reason", Label(v1::StopReason_Name(r), "STOP_REASON_")}});
  }
  auto& retunes = prometheus::BuildCounter()
                      .Name("tunefleet_coordinator_retunes_total")
                      .Help("Finished job targets of keys that had a best, by what became "
                            "of it: replaced (faster), regressed (kept: not faster), forced "
                            "(replace_best), confirmed (re-measured, tied: kept)")
                      .Register(registry);
  for (v1::RetuneOutcome outcome :
       {v1::RETUNE_OUTCOME_REPLACED, v1::RETUNE_OUTCOME_REGRESSED, v1::RETUNE_OUTCOME_FORCED,
        v1::RETUNE_OUTCOME_CONFIRMED}) {
    f.retunes[outcome] =
        &retunes.Add({{"outcome", Label(v1::RetuneOutcome_Name(outcome), "RETUNE_OUTCOME_")}});
  }
  f.quarantined = &prometheus::BuildGauge()
                       .Name("tunefleet_coordinator_workers_quarantined")
                       .Help("Worker principals quarantined (results refused)")
                       .Register(registry)
                       .Add({});
  f.store_operations = &prometheus::BuildHistogram()
                            .Name("tunefleet_coordinator_store_operation_seconds")
                            .Help("Time of store calls, by operation (every outcome)")
                            .Register(registry);
  f.store_errors = &prometheus::BuildCounter()
                        .Name("tunefleet_coordinator_store_errors_total")
                        .Help("Store calls that failed, by operation and status code")
                        .Register(registry);
  f.rpc_seconds = &prometheus::BuildHistogram()
                       .Name("tunefleet_coordinator_rpc_seconds")
                       .Help("Time of gRPC calls, by method and status code (the _count is "
                             "the number of calls)")
                       .Register(registry);
  f.queued = &prometheus::BuildGauge()
                  .Name("tunefleet_coordinator_queued_trials")
                  .Help("Trials waiting to be leased, by target device model")
                  .Register(registry);
  f.profiles_pending = &prometheus::BuildGauge()
                            .Name("tunefleet_coordinator_profile_requests_pending")
                            .Help("Configs of profile requests waiting for a worker or leased")
                            .Register(registry)
                            .Add({});
  auto& profiles = prometheus::BuildCounter()
                       .Name("tunefleet_coordinator_profiles_total")
                       .Help("Profiles stored, by outcome: counters read, or unavailable "
                             "(stored with the reason)")
                       .Register(registry);
  f.profiles = {&profiles.Add({{"outcome", "unavailable"}}), &profiles.Add({{"outcome", "read"}})};
  f.artifacts = &prometheus::BuildGauge()
                     .Name("tunefleet_coordinator_shared_artifacts")
                     .Help("Compiled configs on the shared-artifact shelf")
                     .Register(registry)
                     .Add({});
  f.artifact_bytes = &prometheus::BuildGauge()
                          .Name("tunefleet_coordinator_shared_artifact_bytes")
                          .Help("Bytes on the shared-artifact shelf (--artifact-cache-mib bounds it)")
                          .Register(registry)
                          .Add({});
  auto& artifact_requests = prometheus::BuildCounter()
                                .Name("tunefleet_coordinator_artifact_requests_total")
                                .Help("GetArtifact calls by result: hit (served: a compile saved) "
                                      "or miss")
                                .Register(registry);
  f.artifact_requests = {&artifact_requests.Add({{"result", "miss"}}),
                         &artifact_requests.Add({{"result", "hit"}})};
  f.artifact_conflicts = &prometheus::BuildCounter()
                              .Name("tunefleet_coordinator_artifact_conflicts_total")
                              .Help("Publishes of an artifact key whose content differed from "
                                    "the copy shared under it: the key is shared no more")
                              .Register(registry)
                              .Add({});
  f.lock_batches = &prometheus::BuildCounter()
                        .Name("tunefleet_coordinator_job_lock_batches_total")
                        .Help("Batches the job lock ran its hot sections (leases, reports) in; "
                              "sections over batches is the mean batch, above 1 when callers "
                              "queued for the lock")
                        .Register(registry)
                        .Add({});
  f.lock_sections = &prometheus::BuildCounter()
                         .Name("tunefleet_coordinator_job_lock_sections_total")
                         .Help("Hot sections (leases, reports) the job lock ran, in batches")
                         .Register(registry)
                         .Add({});
  ASSIGN_OR_RETURN(metrics->endpoint_, MetricsEndpoint::Start(listen, metrics->registry_));
  return metrics;
}

void PrometheusMetrics::JobSubmitted(Submission submission) {
  families_->submitted[static_cast<int>(submission)]->Increment();
}

void PrometheusMetrics::JobStateChanged(v1::JobState from, v1::JobState to) {
  if (from > 0 && from < kJobStates) families_->jobs[from]->Decrement();
  if (to > 0 && to < kJobStates) families_->jobs[to]->Increment();
}

void PrometheusMetrics::TrialRecorded(v1::TrialStatus status) {
  if (status > 0 && status < kTrialStatuses) families_->trials[status]->Increment();
}

void PrometheusMetrics::LeaseGranted(int trials) {
  families_->leases->Increment();
  families_->leased_trials->Increment(trials);
}

void PrometheusMetrics::LeaseExpired() { families_->expirations->Increment(); }

void PrometheusMetrics::LeaseAdopted(int results) {
  families_->adopted_leases->Increment();
  families_->adopted_results->Increment(results);
}

void PrometheusMetrics::ReceiptRefused() { families_->refused_receipts->Increment(); }

void PrometheusMetrics::WorkersAlive(int count) { families_->workers->Set(count); }

void PrometheusMetrics::SpeedupObserved(double speedup) { families_->speedup->Observe(speedup); }

void PrometheusMetrics::StoreCall(absl::Duration elapsed) {
  families_->store_seconds->Observe(absl::ToDoubleSeconds(elapsed));
}

void PrometheusMetrics::StrandedJobRepaired() { families_->stranded->Increment(); }

void PrometheusMetrics::CallRefused(bool authenticated) {
  (authenticated ? families_->permission_denied : families_->unauthenticated)->Increment();
}

void PrometheusMetrics::StoreHealthy(bool healthy) { families_->store_up->Set(healthy ? 1 : 0); }

void PrometheusMetrics::Leading(bool leading) { families_->leading->Set(leading ? 1 : 0); }

void PrometheusMetrics::SearchFinished(v1::StopReason reason) {
  if (reason > 0 && reason < kStopReasons) families_->searches[reason]->Increment();
}

void PrometheusMetrics::RetuneFinished(v1::RetuneOutcome outcome) {
  if (outcome >= 0 && outcome < kRetuneOutcomes && families_->retunes[outcome] != nullptr) {
    families_->retunes[outcome]->Increment();
  }
}

void PrometheusMetrics::VerificationFinished(Verification outcome) {
  families_->verifications[static_cast<int>(outcome)]->Increment();
}

void PrometheusMetrics::SpotCheckFinished(SpotCheck outcome) {
  families_->spot_checks[static_cast<int>(outcome)]->Increment();
}

void PrometheusMetrics::WorkersQuarantined(int count) { families_->quarantined->Set(count); }

void PrometheusMetrics::StoreOperation(absl::string_view operation, absl::StatusCode code,
                                       absl::Duration elapsed) {
  const std::string name(operation);
  families_->store_operations->Add({{"operation", name}}, StoreBuckets())
      .Observe(absl::ToDoubleSeconds(elapsed));
  if (code != absl::StatusCode::kOk) {
    families_->store_errors->Add({{"operation", name}, {"code", absl::StatusCodeToString(code)}})
        .Increment();
  }
}

void PrometheusMetrics::CallFinished(absl::string_view method, absl::StatusCode code,
                                     absl::Duration elapsed) {
  families_->rpc_seconds
      ->Add({{"method", std::string(method)}, {"code", absl::StatusCodeToString(code)}},
            RpcBuckets())
      .Observe(absl::ToDoubleSeconds(elapsed));
}

void PrometheusMetrics::ProfilesPending(int64_t configs) {
  families_->profiles_pending->Set(static_cast<double>(configs));
}

void PrometheusMetrics::ProfileStored(bool read) { families_->profiles[read ? 1 : 0]->Increment(); }

void PrometheusMetrics::ArtifactsShelved(int64_t count, int64_t bytes) {
  families_->artifacts->Set(static_cast<double>(count));
  families_->artifact_bytes->Set(static_cast<double>(bytes));
}

void PrometheusMetrics::ArtifactRequested(bool found) {
  families_->artifact_requests[found ? 1 : 0]->Increment();
}

void PrometheusMetrics::ArtifactConflicted() { families_->artifact_conflicts->Increment(); }

void PrometheusMetrics::JobLockBatches(int64_t batches, int64_t sections) {
  Families& f = *families_;
  absl::MutexLock lock(&f.lock_mu);
  const auto add_growth = [](prometheus::Counter* counter, int64_t total, int64_t* seen) {
    if (total <= *seen) return;
    counter->Increment(static_cast<double>(total - *seen));
    *seen = total;
  };
  add_growth(f.lock_batches, batches, &f.lock_batches_seen);
  add_growth(f.lock_sections, sections, &f.lock_sections_seen);
}

void PrometheusMetrics::QueuedTrials(
    const std::vector<std::pair<std::string, int64_t>>& by_model) {
  Families& f = *families_;
  absl::MutexLock lock(&f.queued_mu);
  absl::flat_hash_set<std::string> idle = f.queued_models;
  for (const auto& [model, trials] : by_model) {
    f.queued->Add({{"device_model", model}}).Set(static_cast<double>(trials));
    f.queued_models.insert(model);
    idle.erase(model);
  }
  for (const std::string& model : idle) f.queued->Add({{"device_model", model}}).Set(0);
}

}  // namespace tunefleet::server
