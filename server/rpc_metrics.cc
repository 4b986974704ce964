#include "server/rpc_metrics.h"

#include <google/protobuf/descriptor.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"

namespace tunefleet::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class RpcMetrics : public grpc::experimental::Interceptor {
 public:
  RpcMetrics(CoordinatorMetrics* metrics, const char* method)
      : metrics_(metrics), method_(MethodLabel(method)), start_(absl::Now()) {}

  // A call cancelled before it sent a status ends here uncounted so far.
  ~RpcMetrics() override {
    if (!counted_) {
      metrics_->CallFinished(method_, absl::StatusCode::kCancelled, absl::Now() - start_);
    }
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (!counted_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      counted_ = true;
      metrics_->CallFinished(method_, FromGrpcStatus(methods->GetSendStatus()).code(),
                             absl::Now() - start_);
    }
    methods->Proceed();
  }

 private:
  CoordinatorMetrics* const metrics_;
  const std::string method_;
  const absl::Time start_;
  bool counted_ = false;  // hooks of one call run one at a time
};

}  // namespace

std::string MethodLabel(const char* path) {
  const std::string text = path == nullptr ? "" : path;
  if (text.size() < 2 || text[0] != '/') return "other";
  const std::string full = absl::StrReplaceAll(text.substr(1), {{"/", "."}});
  const google::protobuf::MethodDescriptor* method =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(full);
  if (method == nullptr) return "other";
  return absl::StrCat(method->service()->name(), "/", method->name());
}

grpc::experimental::Interceptor* RpcMetricsFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new RpcMetrics(metrics_, info->method());
}

}  // namespace tunefleet::server
