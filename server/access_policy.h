// Who may call what: the roles of tunefleet's principals and the role each
// RPC method needs. Pure functions; the gRPC side lives in auth_processor.h.
//
//   method                                   needs
//   grpc.health.v1.Health/*                  nothing (load balancers probe it)
//   TuningService Get*/List*/WatchJob        read
//   TuningService SubmitJob, CancelJob,      submit (cancelling or profiling
//                 ProfileJob                 another principal's job: admin,
//                                            checked by the handler that knows
//                                            the owner)
//   TokenService/*, AdminService/*           admin
//   WorkerService/*                          a worker certificate
//   server reflection                        read
//   anything else                            admin
//
// Roles are ordered read < submit < admin; a worker certificate grants the
// worker role only, and a token never grants it.
#ifndef TUNEFLEET_SERVER_ACCESS_POLICY_H_
#define TUNEFLEET_SERVER_ACCESS_POLICY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tunefleet::server {

enum class Role { kNone = 0, kRead = 1, kSubmit = 2, kAdmin = 3, kWorker = 4 };

// "read", "submit", "admin", "worker"; "none" for kNone.
const char* RoleName(Role role);
// InvalidArgument for anything but read, submit and admin (workers are
// identified by certificate, never by token).
absl::StatusOr<Role> ParseTokenRole(absl::string_view name);

// What a method needs (see the table above). `method` is the HTTP/2 path,
// "/tunefleet.v1.TuningService/SubmitJob".
Role RequiredRole(absl::string_view method);

// The authenticated caller of one RPC.
struct Caller {
  std::string principal;  // a token's name, or a worker certificate's identity
  Role role = Role::kNone;
  // False only when the coordinator runs without authentication (--insecure):
  // every caller is then an anonymous admin.
  bool authenticated = false;

  // Whether the caller may act on something `owner` submitted.
  bool MayActFor(absl::string_view owner) const;
};

// The caller of an unauthenticated coordinator.
Caller AnonymousCaller();

// OK when `caller` may call `method`; PermissionDenied naming the method
// and the role it needs otherwise.
absl::Status CheckAllowed(const Caller& caller, absl::string_view method);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_ACCESS_POLICY_H_
