// `tunectl health`: asks the coordinator's gRPC health service whether it
// serves (over the same TLS as every call; no token needed), for readiness
// probes and scripts.
#ifndef TUNEFLEET_CLIENT_TUNECTL_HEALTH_H_
#define TUNEFLEET_CLIENT_TUNECTL_HEALTH_H_

#include <string>

#include "client/tunectl/commands.h"

namespace tunefleet::tunectl {

// Prints SERVING, NOT_SERVING or UNKNOWN (json: {"status": ...}) for
// `service` ("" = the whole coordinator). Exit 0 when SERVING; 6 (retry)
// when not serving, unreachable or past the deadline; as any call otherwise.
// For a list of coordinators ("a:7070,b:7070"), a line each: its address,
// status (or UNREACHABLE) and role, `leader` or `standby` (json:
// {"coordinators": [{"address", "status", "role"}]}); exit 0 when one of
// them serves, else 6.
int RunHealth(const ClientOptions& options, const std::string& service, const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_HEALTH_H_
