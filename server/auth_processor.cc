#include "server/auth_processor.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace tunefleet::server {
namespace {

constexpr char kPrincipalProperty[] = "tunefleet.principal";
constexpr char kRoleProperty[] = "tunefleet.role";
constexpr char kBearer[] = "Bearer ";

std::string Find(const grpc::AuthMetadataProcessor::InputMetadata& metadata,
                 const std::string& key) {
  auto it = metadata.find(key);
  return it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
}

std::string Property(const grpc::AuthContext& context, const std::string& name) {
  std::vector<grpc::string_ref> values = context.FindPropertyValues(name);
  return values.empty() ? "" : std::string(values[0].data(), values[0].size());
}

}  // namespace

absl::StatusOr<Caller> AuthProcessor::Authenticate(const InputMetadata& metadata,
                                                   const grpc::AuthContext& context) {
  // gRPC verified the certificate against the fleet's CA before the call.
  const std::string worker = Property(context, "x509_common_name");
  const std::string authorization = Find(metadata, "authorization");
  if (!authorization.empty()) {
    if (!absl::StartsWith(authorization, kBearer)) {
      return absl::UnauthenticatedError("the authorization header is not a bearer token");
    }
    std::optional<Caller> caller = tokens_->Authenticate(
        absl::string_view(authorization).substr(sizeof(kBearer) - 1));
    if (!caller.has_value()) return absl::UnauthenticatedError("unknown or revoked token");
    return *caller;
  }
  if (!worker.empty()) return Caller{worker, Role::kWorker, /*authenticated=*/true};
  return absl::UnauthenticatedError(
      "no credentials: clients send a token (--token-file or TUNEFLEET_TOKEN), workers a "
      "certificate of the fleet's CA");
}

grpc::Status AuthProcessor::Process(const InputMetadata& metadata, grpc::AuthContext* context,
                                    OutputMetadata* consumed, OutputMetadata* /*response*/) {
  const std::string method = Find(metadata, ":path");
  const std::string authorization = Find(metadata, "authorization");
  if (!authorization.empty()) consumed->insert({"authorization", authorization});
  // A call open to anyone (health) sets nothing: the context is the
  // connection's, and its first principal is what every later call reads,
  // so an anonymous call ahead of a worker's (a channel's health watch)
  // must not leave an empty one.
  if (RequiredRole(method) == Role::kNone) return grpc::Status::OK;
  absl::StatusOr<Caller> authenticated = Authenticate(metadata, *context);
  if (!authenticated.ok()) {
    metrics_->CallRefused(/*authenticated=*/false);
    return ToGrpcStatus(authenticated.status());
  }
  const Caller caller = *std::move(authenticated);
  if (absl::Status allowed = CheckAllowed(caller, method); !allowed.ok()) {
    metrics_->CallRefused(/*authenticated=*/true);
    return ToGrpcStatus(allowed);
  }
  context->AddProperty(kPrincipalProperty, caller.principal);
  context->AddProperty(kRoleProperty, std::to_string(static_cast<int>(caller.role)));
  if (!caller.principal.empty()) context->SetPeerIdentityPropertyName(kPrincipalProperty);
  return grpc::Status::OK;
}

Caller CallerOf(const grpc::ServerContextBase& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return AnonymousCaller();
  const std::string role = Property(*auth, kRoleProperty);
  int number = 0;
  if (role.empty() || !absl::SimpleAtoi(role, &number)) return AnonymousCaller();
  return Caller{Property(*auth, kPrincipalProperty), static_cast<Role>(number),
                /*authenticated=*/true};
}

}  // namespace tunefleet::server
