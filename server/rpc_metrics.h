// A server interceptor that reports every RPC's method, status code and
// duration to CoordinatorMetrics. The method label is "Service/Method" for
// a method the process knows (its descriptor is linked in), else "other":
// a client calling made-up methods cannot grow the label set.
#ifndef TUNEFLEET_SERVER_RPC_METRICS_H_
#define TUNEFLEET_SERVER_RPC_METRICS_H_

#include <string>

#include <grpcpp/support/server_interceptor.h>

#include "server/metrics.h"

namespace tunefleet::server {

// "/tunefleet.v1.TuningService/SubmitJob" -> "TuningService/SubmitJob";
// "other" for a path that names no method known to the process.
std::string MethodLabel(const char* path);

// Creates one interceptor per call. Register after interceptors that
// rewrite the status, so that the code counted is the one sent.
// Thread-safety: safe for concurrent use. REQUIRES: `metrics` outlives the
// server.
class RpcMetricsFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsFactory(CoordinatorMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  CoordinatorMetrics* const metrics_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_RPC_METRICS_H_
