// Authentication and authorization of every RPC, in one place, before any
// handler runs: gRPC calls the AuthProcessor with each call's metadata and
// TLS peer. Workers are identified by their client certificate's common
// name, clients by their bearer token; the method's required role comes from
// access_policy.h. A call that fails is answered UNAUTHENTICATED (no or a
// bad credential) or PERMISSION_DENIED (a role that may not call) and never
// reaches its handler.
//
// The AuthContext gRPC hands the processor and the handler is the
// connection's, shared by every call on it, and calls of one connection run
// at once (and may carry different tokens). So the processor writes nothing
// there: a handler asks Callers, which reads the call's own token again, or
// the connection's certificate, which nothing changes after the handshake.
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
  TokenBook* const tokens_;
  NullMetrics null_metrics_;
  CoordinatorMetrics* const metrics_;
};

// The caller of a call that the AuthProcessor let through, for handlers.
// Thread-safety: safe for concurrent use.
class Callers {
 public:
  // `tokens` must outlive this; null when the server authenticates nobody
  // (--insecure): every caller is then AnonymousCaller().
  explicit Callers(TokenBook* tokens) : tokens_(tokens) {}

  // The caller of the RPC `context` serves: its token's, else its
  // certificate's. Unauthenticated when neither is valid any more (its token
  // was revoked while the call waited for its handler).
  absl::StatusOr<Caller> Of(const grpc::ServerContextBase& context) const;

 private:
  TokenBook* const tokens_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_AUTH_PROCESSOR_H_
