// CoordinatorMetrics exported for Prometheus over HTTP (/metrics), families
// built once at start-up. Names follow tunefleet_coordinator_<what>_<unit>;
// labels come from small enums only (states, outcomes), never ids or keys.
#ifndef TUNEFLEET_SERVER_PROMETHEUS_METRICS_H_
#define TUNEFLEET_SERVER_PROMETHEUS_METRICS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics_endpoint.h"
#include "server/metrics.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace tunefleet::server {

// How the coordinator sized itself, exported once at start-up as gauges:
// tunefleet_coordinator_usable_cpus, tunefleet_coordinator_report_threads and
// tunefleet_coordinator_lease_threads.
struct CoordinatorPools {
  int usable_cpus = 0;     // UsableCpus(): affinity and cgroup quota
  int report_threads = 0;  // the CallPool that records reports (--report-threads)
  int lease_threads = 0;   // the CallPool that tries leases (--lease-threads)
};

// Thread-safety: safe for concurrent use.
class PrometheusMetrics final : public CoordinatorMetrics {
 public:
  // Serves /metrics on `listen` ("host:port"; port 0 picks one), with the
  // process_* metrics beside the coordinator's. Unavailable when it cannot
  // listen.
  static absl::StatusOr<std::unique_ptr<PrometheusMetrics>> Start(
      const std::string& listen, const std::string& version, const CoordinatorPools& pools = {});
  ~PrometheusMetrics() override;

  int port() const { return endpoint_->port(); }

  void JobSubmitted(Submission submission) override;
  void JobStateChanged(v1::JobState from, v1::JobState to) override;
  void TrialRecorded(v1::TrialStatus status) override;
  void LeaseGranted(int trials) override;
  void LeaseExpired() override;
  void LeaseAdopted(int results) override;
  void ReceiptRefused() override;
  void WorkersAlive(int count) override;
  void SpeedupObserved(double speedup) override;
  void StoreCall(absl::Duration elapsed) override;
  void StrandedJobRepaired() override;
  void StoreHealthy(bool healthy) override;
  void Leading(bool leading) override;
  void CallRefused(bool authenticated) override;
  void VerificationFinished(Verification outcome) override;
  void SpotCheckFinished(SpotCheck outcome) override;
  void WorkersQuarantined(int count) override;
  void StoreOperation(absl::string_view operation, absl::StatusCode code,
                      absl::Duration elapsed) override;
  void CallFinished(absl::string_view method, absl::StatusCode code,
                    absl::Duration elapsed) override;
  void QueuedTrials(const std::vector<std::pair<std::string, int64_t>>& by_model) override;
  void SearchFinished(v1::StopReason reason) override;
  void RetuneFinished(v1::RetuneOutcome outcome) override;
  void ProfilesPending(int64_t configs) override;
  void ProfileStored(bool read) override;
  void ArtifactsShelved(int64_t count, int64_t bytes) override;
  void ArtifactRequested(bool found) override;
  void ArtifactConflicted() override;
  void JobLockBatches(int64_t batches, int64_t sections) override;

 private:
  struct Families;
  PrometheusMetrics();

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> families_;
  std::unique_ptr<MetricsEndpoint> endpoint_;  // last: stops scraping first
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_PROMETHEUS_METRICS_H_
