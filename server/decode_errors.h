// A server interceptor that answers a request which cannot be decoded with
// INVALID_ARGUMENT. gRPC's C++ library parses a request before any handler
// runs and, when parsing fails, answers INTERNAL with empty details (sync
// handlers) or UNIMPLEMENTED (callback handlers): the client's mistake would
// read as the server's fault. The interceptor sees the failed parse (no
// received message) and rewrites the status it sends.
#ifndef TUNEFLEET_SERVER_DECODE_ERRORS_H_
#define TUNEFLEET_SERVER_DECODE_ERRORS_H_

#include <grpcpp/support/server_interceptor.h>

namespace tunefleet::server {

// Creates one DecodeErrors interceptor per call. Register with
// ServerBuilder::experimental().SetInterceptorCreators.
// Thread-safety: stateless; the interceptors it creates belong to one call.
class DecodeErrorsFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_DECODE_ERRORS_H_
