// What the worker daemon needs from the coordinator: the WorkerService calls
// with absl statuses, so the daemon and its tests never see gRPC. The real
// implementation is CreateGrpcCoordinator (coordinator_link.h).
#ifndef TUNEFLEET_WORKER_COORDINATOR_H_
#define TUNEFLEET_WORKER_COORDINATOR_H_

#include <string>

#include "absl/status/statusor.h"
#include "tunefleet/v1/worker_service.pb.h"

namespace tunefleet::worker {

// Thread-safety: implementations are thread-safe (the heartbeat thread, the
// lease loops and the reporters call at once). Errors are canonical codes:
// Unavailable / DeadlineExceeded mean "retry later".
class Coordinator {
 public:
  virtual ~Coordinator() = default;
  virtual absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest& request) = 0;
  // Long-polls up to request.wait_ms.
  virtual absl::StatusOr<v1::LeaseWorkResponse> LeaseWork(
      const v1::LeaseWorkRequest& request) = 0;
  virtual absl::StatusOr<v1::ReportResultsResponse> ReportResults(
      const v1::ReportResultsRequest& request) = 0;
  virtual absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request) = 0;
  // The content of the blob with SHA-256 `digest`.
  virtual absl::StatusOr<std::string> GetBlob(const std::string& digest) = 0;
  // The artifact this worker's principal shared as `key`; NotFound when
  // none was (SharedArtifacts, on the coordinator).
  virtual absl::StatusOr<v1::Artifact> GetArtifact(const std::string& key) = 0;
  // Publishes what this worker compiled for a job it holds work of
  // (`request` without worker_id: the link stamps it). FailedPrecondition
  // when the key conflicts (another publish of it differed).
  virtual absl::Status PutArtifact(const v1::PutArtifactRequest& request) = 0;
  // Configs to compile ahead, for a worker registered compile-only.
  virtual absl::StatusOr<v1::GetCompileWorkResponse> GetCompileWork(
      const v1::GetCompileWorkRequest& request) = 0;
  // Ends LeaseWork long-polls in flight (they return Cancelled) and makes
  // later ones return at once; other calls are unaffected. For shutdown.
  virtual void InterruptLeaseWaits() = 0;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_COORDINATOR_H_
