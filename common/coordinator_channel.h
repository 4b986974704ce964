// How clients and workers reach the coordinators of a fleet: one address
// ("host:port"; a DNS name may resolve to one address per coordinator), or a
// comma-separated list of IP addresses, one per coordinator that shares the
// database. Only the coordinator that leads the database serves the fleet's
// services (server/coordinator.h; its standbys answer health alone, and
// NOT_SERVING): the channel balances over every address by gRPC's
// client-side health checks of the service it calls, so calls go to the
// leader and follow a takeover.
#ifndef TUNEFLEET_COMMON_COORDINATOR_CHANNEL_H_
#define TUNEFLEET_COMMON_COORDINATOR_CHANNEL_H_

#include <string>

#include <grpcpp/support/channel_arguments.h>

#include "absl/status/statusor.h"

namespace tunefleet {

struct CoordinatorTarget {
  std::string target;     // what grpc::CreateCustomChannel takes
  std::string authority;  // the name TLS checks the certificate for; empty: gRPC's own
};

// One address as it is (any gRPC target); a list as one ipv4: or ipv6:
// target whose authority is the first address. InvalidArgument naming the
// item for an empty item, or for a list with an item that is not an IP
// address and port (a DNS name that resolves to every coordinator does
// that instead), or that mixes IPv4 and IPv6.
absl::StatusOr<CoordinatorTarget> ParseCoordinatorTarget(const std::string& addresses);

// How often a channel to the coordinators pings each connection, and how
// long it waits for the answer before it drops the connection. A
// coordinator that stopped running (paused, its host frozen) still accepts
// TCP, and would otherwise keep its share of the calls, each to time out.
inline constexpr int kCoordinatorKeepaliveMs = 5000;
inline constexpr int kCoordinatorKeepaliveTimeoutMs = 5000;
// The shortest ping interval a coordinator accepts from a channel without
// calls in flight (below kCoordinatorKeepaliveMs).
inline constexpr int kCoordinatorMinPingIntervalMs = 4000;

// Sets `args` to balance over the target's addresses by the health of
// `service` ("tunefleet.v1.WorkerService"), to ping each connection
// (kCoordinatorKeepaliveMs), and the target's authority.
void UseLeadingCoordinator(const CoordinatorTarget& target, const std::string& service,
                           grpc::ChannelArguments* args);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_COORDINATOR_CHANNEL_H_
