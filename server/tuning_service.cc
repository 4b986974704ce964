#include "server/tuning_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/version.h"
#include "server/auth_processor.h"

namespace tunefleet::server {
namespace {

// A wrong result's error as readers other than the job's owner see it.
constexpr char kWrongResultForReaders[] =
    "the outputs differ from the reference (the mismatch's values are shown to the job's "
    "owner and admins)";

grpc::Status InvalidArgument(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

v1::GetBestConfigResponse::Source ToProto(BestConfigAnswer::Source source) {
  switch (source) {
    case BestConfigAnswer::Source::kExact:
      return v1::GetBestConfigResponse::SOURCE_EXACT;
    case BestConfigAnswer::Source::kNearestShape:
      return v1::GetBestConfigResponse::SOURCE_NEAREST_SHAPE;
    case BestConfigAnswer::Source::kDefault:
      return v1::GetBestConfigResponse::SOURCE_DEFAULT;
  }
  return v1::GetBestConfigResponse::SOURCE_UNSPECIFIED;
}

// OK, or the NotFound naming an unknown kernel or device model of `request`.
// Only a kernel never submitted makes Resolve NotFound, and only a default
// answer can be for a model nothing knows (a model with a row is known), so
// the names are looked at only then, off the path of a tuned answer.
absl::Status CheckNames(const FleetNames& names, const v1::GetBestConfigRequest& request,
                        const absl::StatusOr<BestConfigAnswer>& best) {
  if (absl::IsNotFound(best.status())) {
    absl::Status kernel = names.CheckKernel("kernel_name", request.kernel_name());
    return kernel.ok() ? best.status() : kernel;
  }
  if (!best.ok() || best->source != BestConfigAnswer::Source::kDefault) return best.status();
  return names.CheckDeviceModel("device_model", request.device_model());
}

// OK, or the NotFound naming the first of `kernel_name`, `device_model`
// (either may be empty: any) that nothing knows.
absl::Status CheckFilter(const FleetNames& names, const std::string& kernel_name,
                         const std::string& device_model) {
  absl::Status kernel = names.CheckKernel("kernel_name", kernel_name);
  return kernel.ok() ? names.CheckDeviceModel("device_model", device_model) : kernel;
}

void ToProto(BestConfigAnswer answer, v1::GetBestConfigResponse* response) {
  response->set_source(ToProto(answer.source));
  *response->mutable_config() = std::move(answer.config);
  response->set_config_text(std::move(answer.config_text));
  response->set_median_seconds(answer.median_seconds);
  response->set_tuning_key(std::move(answer.tuning_key));
  response->set_job_id(std::move(answer.job_id));
  *response->mutable_tuned_shape() = std::move(answer.tuned_shape);
  response->set_device_model(std::move(answer.device_model));
  response->set_toolkit(std::move(answer.toolkit));
  if (!answer.evidence.empty() && !response->mutable_evidence()->ParseFromString(answer.evidence)) {
    response->clear_evidence();  // unreadable bytes: answered without it
  }
}

}  // namespace

TuningServiceImpl::TuningServiceImpl(JobManager* jobs, WorkerRegistry* workers,
                                     const BestConfigIndex* best_configs, JobHistory* history,
                                     BestTransfer* transfer, ProfileManager* profiles,
                                     const FleetNames* names, JobWatches* watches,
                                     const Callers* callers)
    : jobs_(jobs),
      sweeps_(jobs),
      workers_(workers),
      best_configs_(best_configs),
      history_(history),
      transfer_(transfer),
      profiles_(profiles),
      names_(names),
      watches_(watches),
      callers_(callers) {}

grpc::Status TuningServiceImpl::SubmitJob(grpc::ServerContext* context,
                                          const v1::SubmitJobRequest* request,
                                          v1::SubmitJobResponse* response) {
  if (!request->has_spec()) return MissingField("spec");
  v1::JobSpec spec = request->spec();
  spec.clear_sweep_id();  // the coordinator's to set (SubmitSweep)
  absl::StatusOr<Caller> caller = callers_->Of(*context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  absl::StatusOr<v1::Job> job = jobs_->Submit(spec, caller->principal);
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response->mutable_job() = *std::move(job);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::SubmitSweep(grpc::ServerContext* context,
                                            const v1::SubmitSweepRequest* request,
                                            v1::SubmitSweepResponse* response) {
  if (!request->has_spec()) return MissingField("spec");
  v1::JobSpec spec = request->spec();
  spec.clear_sweep_id();
  absl::StatusOr<Caller> caller = callers_->Of(*context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  absl::StatusOr<SweepGrant> sweep = sweeps_.Submit(
      spec, {request->shapes().begin(), request->shapes().end()}, caller->principal);
  if (!sweep.ok()) return ToGrpcStatus(sweep.status());
  response->set_sweep_id(sweep->sweep_id);
  for (v1::Job& job : sweep->jobs) *response->add_jobs() = std::move(job);
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

grpc::ServerWriteReactor<v1::WatchJobEvent>* TuningServiceImpl::WatchJob(
    grpc::CallbackServerContext* context, const v1::WatchJobRequest* request) {
  absl::StatusOr<Caller> caller = callers_->Of(*context);
  if (!caller.ok()) return JobWatches::Refuse(ToGrpcStatus(caller.status()));
  return watches_->Open(*request, caller->principal);
}

grpc::Status TuningServiceImpl::CancelJob(grpc::ServerContext* context,
                                          const v1::CancelJobRequest* request,
                                          v1::CancelJobResponse* response) {
  if (request->job_id().empty()) return MissingField("job_id");
  // The owner never changes, so reading it first leaves no race.
  absl::StatusOr<v1::Job> owned = jobs_->Get(request->job_id());
  if (!owned.ok()) return ToGrpcStatus(owned.status());
  absl::StatusOr<Caller> caller = callers_->Of(*context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (!caller->MayActFor(owned->owner())) {
    return ToGrpcStatus(absl::PermissionDeniedError(
        absl::StrCat("job ", owned->id(), " belongs to ", owned->owner(),
                     ": cancelling another principal's job needs role admin")));
  }
  absl::StatusOr<v1::Job> job = jobs_->Cancel(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response->mutable_job() = *std::move(job);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ProfileJob(grpc::ServerContext* context,
                                           const v1::ProfileJobRequest* request,
                                           v1::ProfileJobResponse* response) {
  if (request->job_id().empty()) return MissingField("job_id");
  absl::StatusOr<v1::Job> owned = jobs_->Get(request->job_id());
  if (!owned.ok()) return ToGrpcStatus(owned.status());
  absl::StatusOr<Caller> caller = callers_->Of(*context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (!caller->MayActFor(owned->owner())) {
    return ToGrpcStatus(absl::PermissionDeniedError(
        absl::StrCat("job ", owned->id(), " belongs to ", owned->owner(),
                     ": profiling another principal's job needs role admin")));
  }
  absl::StatusOr<std::vector<v1::KernelProfile>> queued =
      profiles_->Request(request->job_id(), request->top());
  if (!queued.ok()) return ToGrpcStatus(queued.status());
  for (v1::KernelProfile& profile : *queued) *response->add_queued() = std::move(profile);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListProfiles(grpc::ServerContext*,
                                             const v1::ListProfilesRequest* request,
                                             v1::ListProfilesResponse* response) {
  if (request->job_id().empty()) return MissingField("job_id");
  absl::StatusOr<v1::Job> job = jobs_->Get(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  absl::StatusOr<std::vector<v1::KernelProfile>> profiles = profiles_->List(request->job_id());
  if (!profiles.ok()) return ToGrpcStatus(profiles.status());
  for (v1::KernelProfile& profile : *profiles) *response->add_profiles() = std::move(profile);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListJobs(grpc::ServerContext*,
                                         const v1::ListJobsRequest* request,
                                         v1::ListJobsResponse* response) {
  if (request->limit() < 0 || request->limit() > kMaxJobPageSize) {
    return InvalidArgument(absl::StrCat("limit must be 0..", kMaxJobPageSize));
  }
  if (!v1::JobState_IsValid(request->state())) return InvalidArgument("unknown job state");
  absl::Status known = CheckFilter(*names_, request->kernel_name(), request->device_model());
  if (!known.ok()) return ToGrpcStatus(known);
  JobListRequest list;
  list.state = request->state();
  list.kernel_name = request->kernel_name();
  list.owner = request->owner();
  list.sweep_id = request->sweep_id();
  list.device_model = request->device_model();
  list.page_size = request->limit() == 0 ? 100 : request->limit();
  list.page_token = request->page_token();
  absl::StatusOr<JobListPage> page = history_->ListJobs(list);
  if (!page.ok()) return ToGrpcStatus(page.status());
  for (v1::Job& job : page->jobs) *response->add_jobs() = std::move(job);
  response->set_next_page_token(std::move(page->next_page_token));
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ListTrials(grpc::ServerContext* context,
                                           const v1::ListTrialsRequest* request,
                                           v1::ListTrialsResponse* response) {
  if (request->job_id().empty()) return MissingField("job_id");
  if (request->page_size() < 0 || request->page_size() > kMaxTrialPageSize) {
    return InvalidArgument(absl::StrCat("page_size must be 0..", kMaxTrialPageSize));
  }
  if (!v1::TrialStatus_IsValid(request->status())) return InvalidArgument("unknown trial status");
  TrialListRequest list;
  list.job_id = request->job_id();
  list.status = request->status();
  list.page_size = request->page_size() == 0 ? 1000 : request->page_size();
  list.page_token = request->page_token();
  absl::StatusOr<TrialListPage> page = history_->ListTrials(list);
  if (!page.ok()) return ToGrpcStatus(page.status());
  // A wrong result's text carries the kernel's own output values (the first
  // mismatch's), which a kernel could fill with anything it read: they are
  // shown to the job's owner and admins, and to other readers the outcome
  // alone.
  const bool wrong = std::any_of(page->trials.begin(), page->trials.end(), [](const auto& t) {
    return t.status() == v1::TRIAL_STATUS_WRONG_RESULT;
  });
  bool owner_sees = true;
  if (wrong) {  // the job's owner is read only for a page that needs it
    absl::StatusOr<v1::Job> owned = jobs_->Get(request->job_id());
    absl::StatusOr<Caller> caller = callers_->Of(*context);
    owner_sees = owned.ok() && caller.ok() && caller->MayActFor(owned->owner());
  }
  for (v1::TrialRecord& trial : page->trials) {
    if (!owner_sees && trial.status() == v1::TRIAL_STATUS_WRONG_RESULT) {
      trial.set_error(kWrongResultForReaders);
    }
    *response->add_trials() = std::move(trial);
  }
  response->set_next_page_token(std::move(page->next_page_token));
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* TuningServiceImpl::GetBestConfig(
    grpc::CallbackServerContext* context, const v1::GetBestConfigRequest* request,
    v1::GetBestConfigResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (request->kernel_name().empty()) {
    reactor->Finish(MissingField("kernel_name"));
    return reactor;
  }
  absl::StatusOr<BestConfigAnswer> best =
      best_configs_->Resolve(request->kernel_name(), request->shape(),
                             request->device_model(), request->toolkit());
  absl::Status status = CheckNames(*names_, *request, best);
  if (status.ok()) ToProto(*std::move(best), response);
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::Status TuningServiceImpl::ListWorkers(grpc::ServerContext*,
                                            const v1::ListWorkersRequest*,
                                            v1::ListWorkersResponse* response) {
  for (v1::WorkerInfo& info : workers_->List()) {
    *response->add_workers() = std::move(info);
  }
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::GetServerInfo(grpc::ServerContext*,
                                              const v1::GetServerInfoRequest*,
                                              v1::GetServerInfoResponse* response) {
  response->set_version(kVersion);
  return grpc::Status::OK;
}

grpc::Status TuningServiceImpl::ExportBest(grpc::ServerContext*,
                                           const v1::ExportBestRequest* request,
                                           v1::ExportBestResponse* response) {
  absl::Status known = CheckFilter(*names_, request->kernel_name(), request->device_model());
  if (!known.ok()) return ToGrpcStatus(known);
  absl::StatusOr<v1::ExportBestResponse> table =
      transfer_->Export(request->kernel_name(), request->device_model());
  if (!table.ok()) return ToGrpcStatus(table.status());
  *response = *std::move(table);
  return grpc::Status::OK;
}

}  // namespace tunefleet::server
