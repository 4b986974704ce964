#include "server/access_policy.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tunefleet::server {
namespace {

constexpr absl::string_view kTuningService = "/tunefleet.v1.TuningService/";

// The method's name after the service's prefix, or "" for another service.
absl::string_view MethodOf(absl::string_view path, absl::string_view service) {
  return absl::ConsumePrefix(&path, service) ? path : absl::string_view();
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kRead: return "read";
    case Role::kSubmit: return "submit";
    case Role::kAdmin: return "admin";
    case Role::kWorker: return "worker";
    case Role::kNone: break;
  }
  return "none";
}

absl::StatusOr<Role> ParseTokenRole(absl::string_view name) {
  if (name == "read") return Role::kRead;
  if (name == "submit") return Role::kSubmit;
  if (name == "admin") return Role::kAdmin;
  return absl::InvalidArgumentError(
      absl::StrCat("role must be read, submit or admin, not \"", name, "\""));
}

Role RequiredRole(absl::string_view method) {
  if (absl::StartsWith(method, "/grpc.health.v1.Health/")) return Role::kNone;
  if (absl::StartsWith(method, "/tunefleet.v1.WorkerService/")) return Role::kWorker;
  if (absl::StartsWith(method, "/grpc.reflection.")) return Role::kRead;
  const absl::string_view tuning = MethodOf(method, kTuningService);
  if (tuning.empty()) return Role::kAdmin;
  const bool submits = tuning == "SubmitJob" || tuning == "SubmitSweep" ||
                       tuning == "CancelJob" || tuning == "ProfileJob";
  return submits ? Role::kSubmit : Role::kRead;
}

bool Caller::MayActFor(absl::string_view owner) const {
  return !authenticated || role == Role::kAdmin || (!principal.empty() && principal == owner);
}

Caller AnonymousCaller() { return Caller{"", Role::kAdmin, /*authenticated=*/false}; }

absl::Status CheckAllowed(const Caller& caller, absl::string_view method) {
  const Role needed = RequiredRole(method);
  if (needed == Role::kNone || !caller.authenticated) return absl::OkStatus();
  const bool worker_call = needed == Role::kWorker;
  const bool worker_caller = caller.role == Role::kWorker;
  if (worker_call == worker_caller &&
      (worker_call || static_cast<int>(caller.role) >= static_cast<int>(needed))) {
    return absl::OkStatus();
  }
  if (worker_call) {
    return absl::PermissionDeniedError(absl::StrCat(
        method, " is for workers, which present a certificate of the fleet's CA"));
  }
  return absl::PermissionDeniedError(absl::StrCat(caller.principal, " (role ",
                                                  RoleName(caller.role), ") may not call ",
                                                  method, ": it needs role ",
                                                  RoleName(needed)));
}

}  // namespace tunefleet::server
