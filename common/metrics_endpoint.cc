#include "common/metrics_endpoint.h"

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <exception>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/process_metrics.h"

namespace tunefleet {
namespace {

// civetweb's: more threads than the default two, and a connection that
// sends no complete request within the timeout is closed (civetweb's default
// is 30 s), so a few idle or half-open connections cannot hold every thread
// and blind the scrapes.
constexpr char kThreads[] = "8";
constexpr char kRequestTimeoutMs[] = "2000";

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  try {
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", listen, "num_threads", kThreads, "request_timeout_ms",
        kRequestTimeoutMs});
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", listen, ": ", e.what()));
  }
  endpoint->exposer_->RegisterCollectable(registry);
  endpoint->process_ = MakeProcessMetrics();
  endpoint->exposer_->RegisterCollectable(endpoint->process_);
  std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
  endpoint->port_ = ports.empty() ? 0 : ports[0];
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() = default;

}  // namespace tunefleet
