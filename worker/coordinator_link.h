// The worker's gRPC link to the coordinator's WorkerService: the only code of
// the worker that touches gRPC.
#ifndef TUNEFLEET_WORKER_COORDINATOR_LINK_H_
#define TUNEFLEET_WORKER_COORDINATOR_LINK_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/grpc_security.h"
#include "worker/coordinator.h"

namespace tunefleet::worker {

struct CoordinatorLinkOptions {
  // Deadline of every call but LeaseWork, whose deadline is its wait_ms plus
  // this. Default 10 s.
  absl::Duration call_timeout = absl::Seconds(10);
  // Largest message accepted (blobs, leases). Default 64 MiB.
  int max_message_bytes = 64 << 20;
  // Cap on gRPC's reconnect backoff, so a restarted coordinator is found
  // soon. Default 2 s.
  absl::Duration max_reconnect_backoff = absl::Seconds(2);
  // TLS with the worker's certificate (its identity), or plaintext for a
  // coordinator started with --insecure. Default: TLS, system roots, no
  // certificate.
  ChannelSecurity security;
};

// A Coordinator over a channel to `target` ("host:port", or a list of the
// coordinators that share a database: common/coordinator_channel.h). The
// channel connects lazily: an unreachable coordinator shows as Unavailable
// calls, never as a failure here. Errors only for a malformed list and for
// unreadable certificate files.
absl::StatusOr<std::unique_ptr<Coordinator>> CreateGrpcCoordinator(
    const std::string& target, const CoordinatorLinkOptions& options);

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_COORDINATOR_LINK_H_
