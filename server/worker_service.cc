#include "server/worker_service.h"

#include "common/grpc_status.h"

namespace tunefleet::server {
namespace {

grpc::Status MissingField(const char* field) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      std::string(field) + " is required");
}

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(JobManager* jobs, WorkerRegistry* workers,
                                     absl::Duration heartbeat_interval,
                                     absl::Duration lease_ttl)
    : jobs_(jobs),
      workers_(workers),
      heartbeat_interval_(heartbeat_interval),
      lease_ttl_(lease_ttl) {}

grpc::Status WorkerServiceImpl::RegisterWorker(grpc::ServerContext*,
                                               const v1::RegisterWorkerRequest* request,
                                               v1::RegisterWorkerResponse* response) {
  absl::StatusOr<std::string> id = workers_->Register(*request);
  if (!id.ok()) return ToGrpcStatus(id.status());
  jobs_->OnWorkerRegistered();
  response->set_worker_id(*id);
  response->set_heartbeat_interval_ms(absl::ToInt64Milliseconds(heartbeat_interval_));
  response->set_lease_ttl_ms(absl::ToInt64Milliseconds(lease_ttl_));
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::LeaseWork(grpc::ServerContext*,
                                          const v1::LeaseWorkRequest* request,
                                          v1::LeaseWorkResponse* response) {
  if (request->worker_id().empty()) return MissingField("worker_id");
  absl::StatusOr<std::optional<v1::Lease>> lease = jobs_->LeaseWork(*request);
  if (!lease.ok()) return ToGrpcStatus(lease.status());
  if (lease->has_value()) *response->mutable_lease() = **std::move(lease);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::ReportResults(grpc::ServerContext*,
                                              const v1::ReportResultsRequest* request,
                                              v1::ReportResultsResponse* response) {
  if (request->worker_id().empty()) return MissingField("worker_id");
  if (request->lease_id().empty()) return MissingField("lease_id");
  absl::StatusOr<v1::ReportResultsResponse> result = jobs_->ReportResults(*request);
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext*,
                                          const v1::HeartbeatRequest* request,
                                          v1::HeartbeatResponse* response) {
  if (request->worker_id().empty()) return MissingField("worker_id");
  if (!workers_->Touch(request->worker_id())) {
    response->set_reregister(true);
    return grpc::Status::OK;
  }
  jobs_->RenewLeases(request->worker_id());
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::GetBlob(grpc::ServerContext*,
                                        const v1::GetBlobRequest* request,
                                        v1::GetBlobResponse* response) {
  if (request->digest().empty()) return MissingField("digest");
  absl::StatusOr<std::string> blob = jobs_->GetBlob(request->digest());
  if (!blob.ok()) return ToGrpcStatus(blob.status());
  response->set_content(*std::move(blob));
  return grpc::Status::OK;
}

}  // namespace tunefleet::server
