// WorkerMetrics exported for Prometheus over HTTP (/metrics), families
// built once at start-up, one series per device of this host (label
// `device`: the device id, "cpu0" or a GPU UUID). Names follow
// tunefleet_worker_<what>_<unit>; process_* metrics come with them.
#ifndef TUNEFLEET_WORKER_PROMETHEUS_METRICS_H_
#define TUNEFLEET_WORKER_PROMETHEUS_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/metrics_endpoint.h"
#include "worker/metrics.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace tunefleet::worker {

// How the worker sized itself, exported once at start-up as gauges:
// tunefleet_worker_usable_cpus, tunefleet_worker_compile_threads and
// tunefleet_worker_compile_servers (the python backend's; 0 elsewhere).
struct WorkerPools {
  int usable_cpus = 0;      // UsableCpus(): affinity and cgroup quota
  int compile_threads = 0;  // the compile pool's threads
  int compile_servers = 0;  // python compile servers started ahead
};

// Thread-safety: safe for concurrent use.
class PrometheusWorkerMetrics final : public WorkerMetrics {
 public:
  // Serves /metrics on `listen` ("host:port"; port 0 picks one) for
  // `devices`, with `pools` as gauges; reports of other devices are
  // dropped. Unavailable when it cannot listen.
  static absl::StatusOr<std::unique_ptr<PrometheusWorkerMetrics>> Start(
      const std::string& listen, const std::string& version, const std::string& backend,
      const std::vector<v1::Device>& devices, const WorkerPools& pools = {});
  ~PrometheusWorkerMetrics() override;

  int port() const { return endpoint_->port(); }

  void TrialFinished(const std::string& device_id, const v1::TrialResult& result) override;
  void Measured(const std::string& device_id, const v1::TrialResult& result,
                absl::Duration elapsed, const v1::TrialPhases& phases) override;
  void ChildStarts(const std::string& device_id, int starts) override;
  void LeaseWaited(const std::string& device_id, absl::Duration waited, bool granted) override;

 private:
  struct Device;
  PrometheusWorkerMetrics();
  Device* Find(const std::string& device_id);

  std::shared_ptr<prometheus::Registry> registry_;
  // Built in Start, read-only after: lookups need no lock.
  absl::flat_hash_map<std::string, std::unique_ptr<Device>> devices_;
  std::unique_ptr<MetricsEndpoint> endpoint_;  // last: stops scraping first
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_PROMETHEUS_METRICS_H_
