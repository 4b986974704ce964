// Authentication and authorization of every RPC, in one place, before any
// handler runs: gRPC calls the AuthProcessor with each call's metadata and
// TLS peer. Workers are identified by their client certificate's common
// name, clients by their bearer token; the method's required role comes from
// access_policy.h. A call that fails is answered UNAUTHENTICATED (no or a
// bad credential) or PERMISSION_DENIED (a role that may not call) and never
// reaches its handler. The caller is recorded in the call's AuthContext,
// where CallerOf finds it.
#ifndef TUNEFLEET_SERVER_AUTH_PROCESSOR_H_
#define TUNEFLEET_SERVER_AUTH_PROCESSOR_H_

#include <grpcpp/security/auth_metadata_processor.h>
#include <grpcpp/server_context.h>

#include "absl/status/statusor.h"
#include "server/access_policy.h"
#include "server/metrics.h"
#include "server/token_book.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use; it runs on gRPC's threads and
// never blocks (token lookups read memory).
class AuthProcessor : public grpc::AuthMetadataProcessor {
 public:
  // `tokens` and `metrics` must outlive the processor; `metrics` may be null.
  AuthProcessor(TokenBook* tokens, CoordinatorMetrics* metrics)
      : tokens_(tokens), metrics_(metrics != nullptr ? metrics : &null_metrics_) {}

  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed, OutputMetadata* response) override;

 private:
  absl::StatusOr<Caller> Authenticate(const InputMetadata& metadata,
                                      const grpc::AuthContext& context);

  TokenBook* const tokens_;
  NullMetrics null_metrics_;
  CoordinatorMetrics* const metrics_;
};

// The caller of the RPC `context` serves: the one the AuthProcessor
// recorded, or AnonymousCaller() when the server authenticates nobody
// (--insecure).
Caller CallerOf(const grpc::ServerContextBase& context);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_AUTH_PROCESSOR_H_
