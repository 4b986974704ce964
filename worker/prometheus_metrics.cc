#include "worker/prometheus_metrics.h"

#include <array>
#include <atomic>
#include <exception>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/metrics_endpoint.h"
#include "common/status_macros.h"
#include "worker/measurement.h"

namespace tunefleet::worker {
namespace {

constexpr int kTrialStatuses = v1::TrialStatus_ARRAYSIZE;

// "TRIAL_STATUS_WRONG_RESULT" -> "wrong_result".
std::string OutcomeLabel(int status) {
  return absl::AsciiStrToLower(
      v1::TrialStatus_Name(static_cast<v1::TrialStatus>(status)).substr(13));
}

prometheus::Histogram::BucketBoundaries CompileBuckets() {
  return {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

prometheus::Histogram::BucketBoundaries MeasureBuckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

// LeaseWork long-polls: a device without work waits up to --lease-wait.
prometheus::Histogram::BucketBoundaries LeaseWaitBuckets() {
  return {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30};
}

void AddPoolGauge(const std::string& name, const std::string& help, int value,
                  prometheus::Registry& registry) {
  prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({}).Set(value);
}

void AddPoolGauges(const WorkerPools& pools, prometheus::Registry& registry) {
  AddPoolGauge("tunefleet_worker_usable_cpus",
               "CPUs this worker may use: its affinity mask bounded by its cgroup's CPU quota",
               pools.usable_cpus, registry);
  AddPoolGauge("tunefleet_worker_compile_threads", "Threads of the worker's compile pool",
               pools.compile_threads, registry);
  AddPoolGauge("tunefleet_worker_compile_servers",
               "Python compile servers started ahead (0 for other backends)",
               pools.compile_servers, registry);
}

}  // namespace

struct PrometheusWorkerMetrics::Device {
  std::array<prometheus::Counter*, kTrialStatuses> trials{};
  prometheus::Histogram* compile_seconds = nullptr;
  prometheus::Histogram* measure_seconds = nullptr;
  prometheus::Counter* child_starts = nullptr;
  prometheus::Counter* restarts_crashed = nullptr;
  prometheus::Counter* restarts_timeout = nullptr;
  prometheus::Gauge* sm_clock = nullptr;
  prometheus::Histogram* lease_wait = nullptr;
  prometheus::Counter* leases = nullptr;
  // Where measured trials' time went: the child's phases, then the rest.
  prometheus::Counter* phase_load = nullptr;
  prometheus::Counter* phase_check = nullptr;
  prometheus::Counter* phase_warmup = nullptr;
  prometheus::Counter* phase_sampling = nullptr;
  prometheus::Counter* phase_outside = nullptr;
  std::atomic<int> starts_seen{0};
};

PrometheusWorkerMetrics::PrometheusWorkerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()) {}

PrometheusWorkerMetrics::~PrometheusWorkerMetrics() = default;

absl::StatusOr<std::unique_ptr<PrometheusWorkerMetrics>> PrometheusWorkerMetrics::Start(
    const std::string& listen, const std::string& version, const std::string& backend,
    const std::vector<v1::Device>& devices, const WorkerPools& pools) {
  std::unique_ptr<PrometheusWorkerMetrics> metrics(new PrometheusWorkerMetrics());
  prometheus::Registry& registry = *metrics->registry_;
  AddPoolGauges(pools, registry);
  prometheus::BuildGauge()
      .Name("tunefleet_worker_info")
      .Help("Build information of the worker; always 1")
      .Register(registry)
      .Add({{"version", version}, {"backend", backend}})
      .Set(1);
  auto& trials = prometheus::BuildCounter()
                     .Name("tunefleet_worker_trials_total")
                     .Help("Trials this worker finished, by device and outcome")
                     .Register(registry);
  auto& compile = prometheus::BuildHistogram()
                      .Name("tunefleet_worker_compile_seconds")
                      .Help("Compile time of a config (cache hits included), by device")
                      .Register(registry);
  auto& measure = prometheus::BuildHistogram()
                      .Name("tunefleet_worker_measure_seconds")
                      .Help("Time the benchmark child spent on a config (check, warm-up, "
                            "timing), by device")
                      .Register(registry);
  auto& starts = prometheus::BuildCounter()
                     .Name("tunefleet_worker_child_starts_total")
                     .Help("Benchmark children started (one per job served, and one after "
                           "each kill), by device")
                     .Register(registry);
  auto& restarts = prometheus::BuildCounter()
                       .Name("tunefleet_worker_child_restarts_total")
                       .Help("Benchmark children killed by a config and started again, by "
                             "device and reason")
                       .Register(registry);
  auto& clock = prometheus::BuildGauge()
                    .Name("tunefleet_worker_sm_clock_mhz")
                    .Help("SM clock during the last measurement, by device (only where the "
                          "device reports it)")
                    .Register(registry);
  auto& wait = prometheus::BuildHistogram()
                   .Name("tunefleet_worker_lease_wait_seconds")
                   .Help("Time a device waited in LeaseWork, by device (with or without a "
                         "lease at the end)")
                   .Register(registry);
  auto& leases = prometheus::BuildCounter()
                     .Name("tunefleet_worker_leases_total")
                     .Help("Leases this worker was granted, by device")
                     .Register(registry);
  auto& phases = prometheus::BuildCounter()
                     .Name("tunefleet_worker_trial_phase_seconds_total")
                     .Help("Where measured trials' time went, by device and phase: load, "
                           "check, warmup and sampling (the kernel's samples with their "
                           "flushes and synchronisations) in the benchmark child, outside the "
                           "rest of the worker's wait for the child")
                     .Register(registry);
  for (const v1::Device& device : devices) {
    auto entry = std::make_unique<Device>();
    auto phase = [&](const char* name) {
      return &phases.Add({{"device", device.id()}, {"phase", name}});
    };
    entry->phase_load = phase("load");
    entry->phase_check = phase("check");
    entry->phase_warmup = phase("warmup");
    entry->phase_sampling = phase("sampling");
    entry->phase_outside = phase("outside");
    const prometheus::Labels labels{{"device", device.id()}};
    for (int s = 1; s < kTrialStatuses; ++s) {
      entry->trials[s] = &trials.Add({{"device", device.id()}, {"outcome", OutcomeLabel(s)}});
    }
    entry->compile_seconds = &compile.Add(labels, CompileBuckets());
    entry->measure_seconds = &measure.Add(labels, MeasureBuckets());
    entry->child_starts = &starts.Add(labels);
    entry->restarts_crashed = &restarts.Add({{"device", device.id()}, {"reason", "crashed"}});
    entry->restarts_timeout = &restarts.Add({{"device", device.id()}, {"reason", "timeout"}});
    if (device.backend() == v1::BACKEND_CUDA) entry->sm_clock = &clock.Add(labels);
    entry->lease_wait = &wait.Add(labels, LeaseWaitBuckets());
    entry->leases = &leases.Add(labels);
    metrics->devices_[device.id()] = std::move(entry);
  }
  ASSIGN_OR_RETURN(metrics->endpoint_, MetricsEndpoint::Start(listen, metrics->registry_));
  return metrics;
}

PrometheusWorkerMetrics::Device* PrometheusWorkerMetrics::Find(const std::string& device_id) {
  auto it = devices_.find(device_id);
  return it == devices_.end() ? nullptr : it->second.get();
}

void PrometheusWorkerMetrics::TrialFinished(const std::string& device_id,
                                            const v1::TrialResult& result) {
  Device* device = Find(device_id);
  if (device == nullptr) return;
  const int status = result.status();
  if (status > 0 && status < kTrialStatuses) device->trials[status]->Increment();
  if (result.compile_seconds() > 0) device->compile_seconds->Observe(result.compile_seconds());
}

void PrometheusWorkerMetrics::Measured(const std::string& device_id,
                                       const v1::TrialResult& result, absl::Duration elapsed,
                                       const v1::TrialPhases& phases) {
  Device* device = Find(device_id);
  if (device == nullptr) return;
  const double seconds = absl::ToDoubleSeconds(elapsed);
  device->measure_seconds->Observe(seconds);
  if (phases.ByteSizeLong() > 0) {
    device->phase_load->Increment(phases.load_seconds());
    device->phase_check->Increment(phases.check_seconds());
    device->phase_warmup->Increment(phases.warmup_seconds());
    device->phase_sampling->Increment(phases.sampling_seconds());
    device->phase_outside->Increment(OutsideSeconds(phases, seconds));
  }
  if (result.status() == v1::TRIAL_STATUS_CRASHED) device->restarts_crashed->Increment();
  if (result.status() == v1::TRIAL_STATUS_TIMEOUT) device->restarts_timeout->Increment();
  const double mhz = result.measurement().clock_mhz();
  if (device->sm_clock != nullptr && mhz > 0) device->sm_clock->Set(mhz);
}

void PrometheusWorkerMetrics::ChildStarts(const std::string& device_id, int starts) {
  Device* device = Find(device_id);
  if (device == nullptr) return;
  const int seen = device->starts_seen.exchange(starts);
  if (starts > seen) device->child_starts->Increment(starts - seen);
}

void PrometheusWorkerMetrics::LeaseWaited(const std::string& device_id, absl::Duration waited,
                                          bool granted) {
  Device* device = Find(device_id);
  if (device == nullptr) return;
  device->lease_wait->Observe(absl::ToDoubleSeconds(waited));
  if (granted) device->leases->Increment();
}

}  // namespace tunefleet::worker
