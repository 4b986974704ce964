#include "server/decode_errors.h"

#include <string>

namespace tunefleet::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class DecodeErrors : public grpc::experimental::Interceptor {
 public:
  explicit DecodeErrors(const char* method) : method_(method == nullptr ? "" : method) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      undecodable_ = true;
    }
    if (undecodable_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      methods->ModifySendStatus(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          "the request cannot be decoded as the request message of " + method_));
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  bool undecodable_ = false;  // hooks of one call run one at a time
};

}  // namespace

grpc::experimental::Interceptor* DecodeErrorsFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new DecodeErrors(info->method());
}

}  // namespace tunefleet::server
