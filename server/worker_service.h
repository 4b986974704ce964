// The gRPC adapter of WorkerService: registration, leases, results,
// heartbeats and source blobs, each one call on the registry or JobManager.
#ifndef TUNEFLEET_SERVER_WORKER_SERVICE_H_
#define TUNEFLEET_SERVER_WORKER_SERVICE_H_

#include "absl/time/time.h"
#include "server/job_manager.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/worker_service.grpc.pb.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use.
class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  WorkerServiceImpl(JobManager* jobs, WorkerRegistry* workers,
                    absl::Duration heartbeat_interval, absl::Duration lease_ttl);

  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const v1::RegisterWorkerRequest* request,
                              v1::RegisterWorkerResponse* response) override;
  grpc::Status LeaseWork(grpc::ServerContext* context, const v1::LeaseWorkRequest* request,
                         v1::LeaseWorkResponse* response) override;
  grpc::Status ReportResults(grpc::ServerContext* context,
                             const v1::ReportResultsRequest* request,
                             v1::ReportResultsResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  grpc::Status GetBlob(grpc::ServerContext* context, const v1::GetBlobRequest* request,
                       v1::GetBlobResponse* response) override;

 private:
  JobManager* const jobs_;
  WorkerRegistry* const workers_;
  const absl::Duration heartbeat_interval_;
  const absl::Duration lease_ttl_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_WORKER_SERVICE_H_
