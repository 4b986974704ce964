#include "server/auth_processor.h"

#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace tunefleet::server {
namespace {

constexpr char kBearer[] = "Bearer ";

std::string Find(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                 const std::string& key) {
  auto it = metadata.find(key);
  return it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
}

std::string Property(const grpc::AuthContext& context, const std::string& name) {
  std::vector<grpc::string_ref> values = context.FindPropertyValues(name);
  return values.empty() ? "" : std::string(values[0].data(), values[0].size());
}

using Metadata = std::multimap<grpc::string_ref, grpc::string_ref>;

// The caller a call's `metadata` and its connection's `context` name: its
// bearer token's, else its certificate's. Unauthenticated without either, or
// with a token nobody issued (or revoked).
absl::StatusOr<Caller> Authenticate(TokenBook& tokens, const Metadata& metadata,
                                    const grpc::AuthContext& context) {
  // gRPC verified the certificate against the fleet's CA before the call.
  const std::string worker = Property(context, "x509_common_name");
  const std::string authorization = Find(metadata, "authorization");
  if (!authorization.empty()) {
    if (!absl::StartsWith(authorization, kBearer)) {
      return absl::UnauthenticatedError("the authorization header is not a bearer token");
    }
    std::optional<Caller> caller = tokens.Authenticate(
        absl::string_view(authorization).substr(sizeof(kBearer) - 1));
    if (!caller.has_value()) return absl::UnauthenticatedError("unknown or revoked token");
    return *caller;
  }
  if (!worker.empty()) return Caller{worker, Role::kWorker, /*authenticated=*/true};
  return absl::UnauthenticatedError(
      "no credentials: clients send a token (--token-file or TUNEFLEET_TOKEN), workers a "
      "certificate of the fleet's CA");
}

}  // namespace

grpc::Status AuthProcessor::Process(const InputMetadata& metadata, grpc::AuthContext* context,
                                    OutputMetadata* /*consumed*/, OutputMetadata* /*response*/) {
  // The token stays in the call's metadata: Callers reads it again.
  const std::string method = Find(metadata, ":path");
  if (RequiredRole(method) == Role::kNone) return grpc::Status::OK;
  absl::StatusOr<Caller> authenticated = Authenticate(*tokens_, metadata, *context);
  if (!authenticated.ok()) {
    metrics_->CallRefused(/*authenticated=*/false);
    return ToGrpcStatus(authenticated.status());
  }
  if (absl::Status allowed = CheckAllowed(*authenticated, method); !allowed.ok()) {
    metrics_->CallRefused(/*authenticated=*/true);
    return ToGrpcStatus(allowed);
  }
  return grpc::Status::OK;
}

absl::StatusOr<Caller> Callers::Of(const grpc::ServerContextBase& context) const {
  if (tokens_ == nullptr) return AnonymousCaller();
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return absl::UnauthenticatedError("the call has no credentials");
  return Authenticate(*tokens_, context.client_metadata(), *auth);
}

}  // namespace tunefleet::server
