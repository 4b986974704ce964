#include "server/tuning_service.h"

#include "common/grpc_status.h"
#include "server/best_config.h"

namespace tunefleet::server {
namespace {

grpc::Status MissingField(const char* field) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      std::string(field) + " is required");
}

}  // namespace

TuningServiceImpl::TuningServiceImpl(JobManager* jobs, WorkerRegistry* workers,
                                     Store* store)
    : jobs_(jobs), workers_(workers), store_(store) {}

grpc::Status TuningServiceImpl::SubmitJob(grpc::ServerContext*,
                                          const v1::SubmitJobRequest* request,
                                          v1::SubmitJobResponse* response) {
  if (!request->has_spec()) return MissingField("spec");
  absl::StatusOr<v1::Job> job = jobs_->Submit(request->spec());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response->mutable_job() = *std::move(job);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetJob(grpc::ServerContext*,
                                       const v1::GetJobRequest* request,
                                       v1::GetJobResponse* response) {
  if (request->job_id().empty()) return MissingField("job_id");
  absl::StatusOr<v1::Job> job = jobs_->Get(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response->mutable_job() = *std::move(job);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::WatchJob(grpc::ServerContext* context,
                                         const v1::WatchJobRequest* request,
                                         grpc::ServerWriter<v1::WatchJobEvent>* writer) {
  if (request->job_id().empty()) return MissingField("job_id");
  int64_t version = -1;
  int64_t sent = -2;
  while (!context->IsCancelled()) {
    absl::StatusOr<v1::Job> job =
        jobs_->WaitForChange(request->job_id(), &version, absl::Milliseconds(500));
    if (!job.ok()) return ToGrpcStatus(job.status());
    if (version == sent) continue;
    sent = version;
    v1::WatchJobEvent event;
    *event.mutable_job() = *job;
    if (!writer->Write(event)) break;  // the client went away
    if (IsFinal(job->state())) return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "watch ended by the client");
}

grpc::Status TuningServiceImpl::CancelJob(grpc::ServerContext*,
                                          const v1::CancelJobRequest* request,
                                          v1::CancelJobResponse* response) {
  if (request->job_id().empty()) return MissingField("job_id");
  absl::StatusOr<v1::Job> job = jobs_->Cancel(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response->mutable_job() = *std::move(job);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListJobs(grpc::ServerContext*,
                                         const v1::ListJobsRequest* request,
                                         v1::ListJobsResponse* response) {
  if (request->limit() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "limit must not be negative");
  }
  for (v1::Job& job : jobs_->List(request->limit() == 0 ? 100 : request->limit())) {
    *response->add_jobs() = std::move(job);
  }
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetBestConfig(grpc::ServerContext*,
                                              const v1::GetBestConfigRequest* request,
                                              v1::GetBestConfigResponse* response) {
  if (request->kernel_name().empty()) return MissingField("kernel_name");
  absl::StatusOr<v1::JobSpec> latest = jobs_->LatestSpec(request->kernel_name());
  if (!latest.ok()) return ToGrpcStatus(latest.status());
  absl::StatusOr<v1::GetBestConfigResponse> best =
      ResolveBestConfig(store_, *latest, *request);
  if (!best.ok()) return ToGrpcStatus(best.status());
  *response = *std::move(best);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListWorkers(grpc::ServerContext*,
                                            const v1::ListWorkersRequest*,
                                            v1::ListWorkersResponse* response) {
  for (v1::WorkerInfo& info : workers_->List()) {
    *response->add_workers() = std::move(info);
  }
  return grpc::Status::OK;
}

}  // namespace tunefleet::server
