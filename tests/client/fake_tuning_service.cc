#include "tests/client/fake_tuning_service.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tunefleet::testing {

v1::Job MakeJob(const std::string& id, v1::JobState state, int64_t done,
                int64_t total) {
  v1::Job job;
  job.set_id(id);
  job.set_kernel_name("matmul");
  job.set_state(state);
  job.set_trials_done(done);
  job.set_trials_total(total);
  return job;
}

void FakeTuningService::AddJob(const std::string& id,
                               std::vector<v1::Job> updates) {
  absl::MutexLock lock(&mu_);
  jobs_[id] = std::move(updates);
}

std::optional<v1::SubmitJobRequest> FakeTuningService::last_submit() const {
  absl::MutexLock lock(&mu_);
  return last_submit_;
}

void FakeTuningService::set_best(v1::GetBestConfigResponse best) {
  absl::MutexLock lock(&mu_);
  best_ = std::move(best);
}

std::optional<std::vector<v1::Job>> FakeTuningService::Updates(
    const std::string& id) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

grpc::Status FakeTuningService::SubmitJob(grpc::ServerContext*,
                                          const v1::SubmitJobRequest* request,
                                          v1::SubmitJobResponse* response) {
  absl::MutexLock lock(&mu_);
  last_submit_ = *request;
  *response->mutable_job() = MakeJob("job-1", v1::JOB_STATE_QUEUED, 0, 10);
  *response->mutable_job()->mutable_shape() = request->spec().shape();
  return grpc::Status::OK;
}

grpc::Status FakeTuningService::GetJob(grpc::ServerContext* context,
                                       const v1::GetJobRequest* request,
                                       v1::GetJobResponse* response) {
  if (request->job_id() == kSlowJob) {
    absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!context->IsCancelled() && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    return grpc::Status(grpc::StatusCode::INTERNAL, "no deadline arrived");
  }
  if (request->job_id() == kEndlessJob) {
    *response->mutable_job() =
        MakeJob(kEndlessJob, v1::JOB_STATE_RUNNING, 1, 10);
    return grpc::Status::OK;
  }
  std::optional<std::vector<v1::Job>> updates = Updates(request->job_id());
  if (!updates.has_value() || updates->empty()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no job " + request->job_id());
  }
  *response->mutable_job() = updates->front();
  return grpc::Status::OK;
}

grpc::Status FakeTuningService::WatchJob(
    grpc::ServerContext* context, const v1::WatchJobRequest* request,
    grpc::ServerWriter<v1::WatchJobEvent>* writer) {
  v1::WatchJobEvent event;
  if (request->job_id() == kEndlessJob) {
    *event.mutable_job() = MakeJob(kEndlessJob, v1::JOB_STATE_RUNNING, 1, 10);
    writer->Write(event);
    while (!context->IsCancelled()) absl::SleepFor(absl::Milliseconds(5));
    return grpc::Status::CANCELLED;
  }
  std::optional<std::vector<v1::Job>> updates = Updates(request->job_id());
  if (!updates.has_value())
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no job");
  for (const v1::Job& job : *updates) {
    *event.mutable_job() = job;
    if (!writer->Write(event)) break;
  }
  return grpc::Status::OK;
}

grpc::Status FakeTuningService::CancelJob(grpc::ServerContext*,
                                          const v1::CancelJobRequest* request,
                                          v1::CancelJobResponse* response) {
  if (!Updates(request->job_id()).has_value()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no job " + request->job_id());
  }
  *response->mutable_job() =
      MakeJob(request->job_id(), v1::JOB_STATE_CANCELLED, 0, 0);
  return grpc::Status::OK;
}

grpc::Status FakeTuningService::ListJobs(grpc::ServerContext*,
                                         const v1::ListJobsRequest* request,
                                         v1::ListJobsResponse* response) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, updates] : jobs_) {
    if (request->limit() > 0 && response->jobs_size() >= request->limit())
      break;
    if (!updates.empty()) *response->add_jobs() = updates.back();
  }
  return grpc::Status::OK;
}

grpc::Status FakeTuningService::GetBestConfig(
    grpc::ServerContext*, const v1::GetBestConfigRequest* request,
    v1::GetBestConfigResponse* response) {
  if (request->kernel_name() != "matmul") {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown kernel");
  }
  absl::MutexLock lock(&mu_);
  *response = best_;
  return grpc::Status::OK;
}

grpc::Status FakeTuningService::ListWorkers(grpc::ServerContext*,
                                            const v1::ListWorkersRequest*,
                                            v1::ListWorkersResponse* response) {
  v1::WorkerInfo* worker = response->add_workers();
  worker->set_worker_id("w1");
  worker->set_host("host-a");
  worker->set_alive(true);
  v1::Device* device = worker->add_devices();
  device->set_id("cpu0");
  device->set_model("Test CPU");
  device->set_backend(v1::BACKEND_CPU);
  return grpc::Status::OK;
}

FakeServer::FakeServer(FakeTuningService* service) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port_);
  builder.RegisterService(service);
  server_ = builder.BuildAndStart();
}

FakeServer::~FakeServer() {
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

}  // namespace tunefleet::testing
