// The gRPC adapter of WorkerService: registration, leases, results,
// heartbeats, source blobs and shared artifacts. Each method converts the
// request to a domain struct, makes one call on the registry, the JobManager,
// LongPolls, SourceBlobs or SharedArtifacts, and converts the answer back.
#ifndef TUNEFLEET_SERVER_WORKER_SERVICE_H_
#define TUNEFLEET_SERVER_WORKER_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <vector>

#include "absl/time/time.h"
#include "server/auth_processor.h"
#include "server/call_pool.h"
#include "server/job_manager.h"
#include "server/lease.h"
#include "server/long_polls.h"
#include "server/shared_artifacts.h"
#include "server/source_blobs.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/worker_service.grpc.pb.h"

namespace tunefleet::server {

// LeaseWork, ReportResults and Heartbeat use gRPC's callback API: a
// long-poll holds no thread while it waits (LongPolls finishes it), a report
// (which waits on the store, and is most of a worker's cost) runs on a
// CallPool whose threads run below gRPC's, so that on a saturated core an
// application's read is scheduled before queued reports; a lease's first try
// (which waits for the JobManager's lock) runs on a CallPool of its own
// (none: on gRPC's thread), so that gRPC's threads do not wait for that lock
// and a heartbeat waits for no lease.
// Registration and blobs are rare and run on the sync server's pool.
using WorkerServiceBase = v1::WorkerService::WithCallbackMethod_LeaseWork<
    v1::WorkerService::WithCallbackMethod_ReportResults<
        v1::WorkerService::WithCallbackMethod_Heartbeat<v1::WorkerService::Service>>>;

// Thread-safety: safe for concurrent use.
class WorkerServiceImpl final : public WorkerServiceBase {
 public:
  // Every pointer must outlive the service. `sources` grant the leases
  // LongPolls hands out (the JobManager among them): a report goes to the
  // source that granted its lease, a heartbeat renews the worker's leases of
  // every source, and a blob is served when a lease of any source needs it.
  // `jobs` also binds jobs to new workers and proposes compiles ahead.
  WorkerServiceImpl(JobManager* jobs, WorkerRegistry* workers, LongPolls* long_polls,
                    SourceBlobs* blobs, CallPool* reports, CallPool* leases /* null: inline */,
                    absl::Duration heartbeat_interval,
                    absl::Duration lease_ttl, std::vector<LeaseSource*> sources,
                    SharedArtifacts* artifacts, const Callers* callers);

  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const v1::RegisterWorkerRequest* request,
                              v1::RegisterWorkerResponse* response) override;
  grpc::ServerUnaryReactor* LeaseWork(grpc::CallbackServerContext* context,
                                      const v1::LeaseWorkRequest* request,
                                      v1::LeaseWorkResponse* response) override;
  grpc::ServerUnaryReactor* ReportResults(grpc::CallbackServerContext* context,
                                          const v1::ReportResultsRequest* request,
                                          v1::ReportResultsResponse* response) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const v1::HeartbeatRequest* request,
                                      v1::HeartbeatResponse* response) override;
  grpc::Status GetBlob(grpc::ServerContext* context, const v1::GetBlobRequest* request,
                       v1::GetBlobResponse* response) override;
  // Artifacts are the calling worker's principal's (SharedArtifacts).
  grpc::Status GetArtifact(grpc::ServerContext* context, const v1::GetArtifactRequest* request,
                           v1::GetArtifactResponse* response) override;
  grpc::Status PutArtifact(grpc::ServerContext* context, const v1::PutArtifactRequest* request,
                           v1::PutArtifactResponse* response) override;
  // Configs for a compile-only worker (JobManager::ProposeCompiles), with
  // their sources' contents.
  grpc::Status GetCompileWork(grpc::ServerContext* context,
                              const v1::GetCompileWorkRequest* request,
                              v1::GetCompileWorkResponse* response) override;

 private:
  // OK unless the caller authenticated with a certificate other than the
  // one `worker_id` registered with (PermissionDenied): a worker acts only
  // for itself.
  absl::Status CheckActsFor(const grpc::ServerContextBase& context,
                            const std::string& worker_id);
  // InvalidArgument without an id, else CheckActsFor.
  absl::Status CheckWorker(const grpc::ServerContextBase& context, const std::string& worker_id);
  // Registered worker `worker_id`, which the caller acts for:
  // InvalidArgument without an id, PermissionDenied as CheckActsFor,
  // NotFound for an unknown worker (as LeaseWork).
  absl::StatusOr<v1::WorkerInfo> RegisteredWorker(const grpc::ServerContextBase& context,
                                                  const std::string& worker_id);

  JobManager* const jobs_;
  const std::vector<LeaseSource*> sources_;
  WorkerRegistry* const workers_;
  LongPolls* const long_polls_;
  SourceBlobs* const blobs_;
  SharedArtifacts* const artifacts_;
  CallPool* const reports_;
  CallPool* const leases_;
  const absl::Duration heartbeat_interval_;
  const absl::Duration lease_ttl_;
  const Callers* const callers_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_WORKER_SERVICE_H_
