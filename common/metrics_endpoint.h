// One /metrics endpoint: a Prometheus Exposer serving a daemon's registry and
// the process_* metrics (process_metrics.h) beside it. The coordinator and
// the worker each own one.
//
// Thread-safety: immutable after Start; the exposer scrapes on its own
// threads.
#ifndef TUNEFLEET_COMMON_METRICS_ENDPOINT_H_
#define TUNEFLEET_COMMON_METRICS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace prometheus {
class Collectable;
class Exposer;
class Registry;
}  // namespace prometheus

namespace tunefleet {

class MetricsEndpoint {
 public:
  // Serves `registry` and the process metrics on `listen` ("host:port";
  // port 0 picks one) with 8 threads; a connection that sends no complete
  // request within 2 s is closed, so idle connections cannot hold every
  // thread. Unavailable when it cannot listen.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& listen, std::shared_ptr<prometheus::Registry> registry);
  ~MetricsEndpoint();

  // The port it listens on (the one picked for port 0).
  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;

  std::shared_ptr<prometheus::Collectable> process_;
  std::unique_ptr<prometheus::Exposer> exposer_;  // last: stops scraping first
  int port_ = 0;
};

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_METRICS_ENDPOINT_H_
