// What a worker counts, behind an interface so that the daemon and the
// executors stay free of any metrics library. PrometheusWorkerMetrics
// (worker/prometheus_metrics.h) is the real sink; NullWorkerMetrics counts
// nothing.
#ifndef TUNEFLEET_WORKER_METRICS_H_
#define TUNEFLEET_WORKER_METRICS_H_

#include <string>

#include "absl/time/time.h"
#include "tunefleet/v1/bench_child.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::worker {

// Thread-safety: implementations are safe for concurrent use (each
// device's lease loop reports from its own thread).
class WorkerMetrics {
 public:
  virtual ~WorkerMetrics() = default;
  // A trial of device `device_id` ended with `result` (any status; its
  // compile_seconds when it was compiled).
  virtual void TrialFinished(const std::string& device_id, const v1::TrialResult& result) = 0;
  // The benchmark child ran a config for `elapsed` (check, warm-up and
  // timing), `phases` being where the child says that time went (empty when
  // it keeps none); a CRASHED or TIMEOUT result means the child was killed
  // and will be started again.
  virtual void Measured(const std::string& device_id, const v1::TrialResult& result,
                        absl::Duration elapsed, const v1::TrialPhases& phases) = 0;
  // The device's benchmark child has been started `starts` times in all.
  virtual void ChildStarts(const std::string& device_id, int starts) = 0;
  // One LeaseWork call for the device waited `waited`; `granted`: it
  // brought a lease.
  virtual void LeaseWaited(const std::string& device_id, absl::Duration waited,
                           bool granted) = 0;
};

class NullWorkerMetrics final : public WorkerMetrics {
 public:
  void TrialFinished(const std::string&, const v1::TrialResult&) override {}
  void Measured(const std::string&, const v1::TrialResult&, absl::Duration,
                const v1::TrialPhases&) override {}
  void ChildStarts(const std::string&, int) override {}
  void LeaseWaited(const std::string&, absl::Duration, bool) override {}
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_METRICS_H_
