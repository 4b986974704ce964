#include "tunefleet/client.h"

#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/client_settings.h"
#include "client/convert.h"
#include "common/config_text.h"
#include "common/coordinator_channel.h"
#include "common/grpc_security.h"
#include "common/grpc_status.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "client/best_table_json.h"
#include "tunefleet/v1/admin_service.grpc.pb.h"
#include "tunefleet/v1/token_service.grpc.pb.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet {

using client_internal::BestConfigFromProto;
using client_internal::JobFromProto;
using client_internal::JobStateToProto;
using client_internal::ProfileFromProto;
using client_internal::TrialFromProto;
using client_internal::TrialStatusFromName;
using client_internal::JobSpecFromRequest;
using client_internal::WorkerFromProto;

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "QUEUED";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kSucceeded:
      return "SUCCEEDED";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kCancelled:
      return "CANCELLED";
    default:
      return "UNSPECIFIED";
  }
}

bool IsFinal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

const char* BestConfigSourceName(BestConfig::Source source) {
  switch (source) {
    case BestConfig::Source::kExact:
      return "EXACT";
    case BestConfig::Source::kNearestShape:
      return "NEAREST_SHAPE";
    case BestConfig::Source::kDefault:
      return "DEFAULT";
    default:
      return "UNSPECIFIED";
  }
}

class Client::Impl {
 public:
  Impl(ClientOptions options, std::shared_ptr<grpc::Channel> channel)
      : options_(std::move(options)),
        stub_(v1::TuningService::NewStub(channel)),
        token_stub_(v1::TokenService::NewStub(channel)),
        admin_stub_(v1::AdminService::NewStub(channel)) {}

  template <typename Stub, typename Request, typename Response>
  using Method = grpc::Status (Stub::*)(grpc::ClientContext*, const Request&, Response*);

  // One unary call under the per-call deadline.
  template <typename Stub, typename Request, typename Response>
  absl::StatusOr<Response> Call(Stub* stub, Method<Stub, Request, Response> method,
                                const Request& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.deadline);
    Response response;
    grpc::Status status = (stub->*method)(&context, request, &response);
    if (!status.ok()) return Annotate(FromGrpcStatus(status));
    return response;
  }
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(Method<v1::TuningService::Stub, Request, Response> method,
                                const Request& request) {
    return Call(stub_.get(), method, request);
  }
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(Method<v1::TokenService::Stub, Request, Response> method,
                                const Request& request) {
    return Call(token_stub_.get(), method, request);
  }
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(Method<v1::AdminService::Stub, Request, Response> method,
                                const Request& request) {
    return Call(admin_stub_.get(), method, request);
  }

  absl::StatusOr<Job> GetJob(const std::string& job_id) {
    v1::GetJobRequest request;
    request.set_job_id(job_id);
    ASSIGN_OR_RETURN(v1::GetJobResponse response,
                     Call(&v1::TuningService::Stub::GetJob, request));
    return JobFromProto(response.job());
  }

  absl::StatusOr<Job> Watch(const std::string& job_id,
                            const std::function<void(const Job&)>& on_update);
  void CancelWatches();

 private:
  // Names the server in transport errors, which otherwise do not say where.
  absl::Status Annotate(absl::Status status) const {
    if (status.code() != absl::StatusCode::kUnavailable &&
        status.code() != absl::StatusCode::kDeadlineExceeded) {
      return status;
    }
    return absl::Status(status.code(),
                        absl::StrCat("tunefleet server ", options_.target, ": ",
                                     status.message()));
  }
  absl::StatusOr<Job> Stream(const std::string& job_id,
                             const std::function<void(const Job&)>& on_update);
  bool Register(grpc::ClientContext* context);
  void Unregister(grpc::ClientContext* context);

  const ClientOptions options_;
  const std::unique_ptr<v1::TuningService::Stub> stub_;
  const std::unique_ptr<v1::TokenService::Stub> token_stub_;
  const std::unique_ptr<v1::AdminService::Stub> admin_stub_;
  absl::Mutex mu_;
  bool watches_cancelled_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<grpc::ClientContext*> watches_ ABSL_GUARDED_BY(mu_);
};

// The stream has no deadline, so a unary GetJob first bounds the time to
// reach the server and learn that the job exists; a job already final needs
// no stream at all.
absl::StatusOr<Job> Client::Impl::Watch(
    const std::string& job_id,
    const std::function<void(const Job&)>& on_update) {
  ASSIGN_OR_RETURN(Job job, GetJob(job_id));
  if (IsFinal(job.state)) {
    on_update(job);
    return job;
  }
  return Stream(job_id, on_update);
}

absl::StatusOr<Job> Client::Impl::Stream(
    const std::string& job_id,
    const std::function<void(const Job&)>& on_update) {
  grpc::ClientContext context;
  if (!Register(&context)) return absl::CancelledError("watch cancelled");
  v1::WatchJobRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReader<v1::WatchJobEvent>> reader =
      stub_->WatchJob(&context, request);
  v1::WatchJobEvent event;
  std::optional<Job> last;
  while (reader->Read(&event)) {
    last = JobFromProto(event.job());
    on_update(*last);
    if (IsFinal(last->state)) {
      context.TryCancel();  // the server would end the stream anyway
      break;
    }
  }
  grpc::Status status = reader->Finish();
  Unregister(&context);
  if (last.has_value() && IsFinal(last->state)) return *std::move(last);
  if (status.error_code() == grpc::StatusCode::CANCELLED) {
    return absl::CancelledError("watch cancelled");
  }
  if (!status.ok()) return Annotate(FromGrpcStatus(status));
  return Annotate(absl::UnavailableError(
      absl::StrCat("watch of job ", job_id, " ended before the job finished")));
}

bool Client::Impl::Register(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  if (watches_cancelled_) return false;
  watches_.insert(context);
  return true;
}

void Client::Impl::Unregister(grpc::ClientContext* context) {
  absl::MutexLock lock(&mu_);
  watches_.erase(context);
}

void Client::Impl::CancelWatches() {
  absl::MutexLock lock(&mu_);
  watches_cancelled_ = true;
  for (grpc::ClientContext* context : watches_) context->TryCancel();
}

absl::StatusOr<ClientOptions> ClientOptions::FromEnvironment() {
  return ResolveClientOptions([](const char* name) { return std::getenv(name); });
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    const ClientOptions& options) {
  if (options.target.empty()) {
    return absl::InvalidArgumentError("no server address given");
  }
  if (options.deadline <= std::chrono::milliseconds::zero()) {
    return absl::InvalidArgumentError("the call deadline must be positive");
  }
  ChannelSecurity security;
  security.insecure = options.insecure;
  security.ca_file = options.ca_file;
  security.token = options.token;
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                   MakeChannelCredentials(security));
  ASSIGN_OR_RETURN(CoordinatorTarget target, ParseCoordinatorTarget(options.target));
  grpc::ChannelArguments args;
  UseLeadingCoordinator(target, v1::TuningService::service_full_name(), &args);
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(target.target, credentials, args);
  return std::unique_ptr<Client>(
      new Client(std::make_unique<Impl>(options, std::move(channel))));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

absl::StatusOr<Job> Client::Submit(const SubmitRequest& request) {
  ASSIGN_OR_RETURN(KernelBundle bundle, LoadKernelDir(request.kernel_dir));
  v1::SubmitJobRequest rpc;
  ASSIGN_OR_RETURN(*rpc.mutable_spec(),
                   JobSpecFromRequest(request, std::move(bundle)));
  ASSIGN_OR_RETURN(v1::SubmitJobResponse response,
                   impl_->Call(&v1::TuningService::Stub::SubmitJob, rpc));
  return JobFromProto(response.job());
}

absl::StatusOr<Sweep> Client::SubmitSweep(const SubmitRequest& request,
                                          const std::vector<std::string>& shapes) {
  if (shapes.empty()) return absl::InvalidArgumentError("a sweep needs at least one shape");
  ASSIGN_OR_RETURN(KernelBundle bundle, LoadKernelDir(request.kernel_dir));
  v1::SubmitSweepRequest rpc;
  for (const std::string& text : shapes) {
    absl::StatusOr<v1::Shape> shape = ParseShape(text);
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape \"", text, "\": ", shape.status().message()));
    }
    *rpc.add_shapes() = *std::move(shape);
  }
  SubmitRequest first = request;
  first.shape = shapes.front();
  first.shape_dims.clear();
  ASSIGN_OR_RETURN(*rpc.mutable_spec(), JobSpecFromRequest(first, std::move(bundle)));
  rpc.mutable_spec()->clear_shape();
  ASSIGN_OR_RETURN(v1::SubmitSweepResponse response,
                   impl_->Call(&v1::TuningService::Stub::SubmitSweep, rpc));
  Sweep sweep;
  sweep.id = response.sweep_id();
  for (const v1::Job& job : response.jobs()) sweep.jobs.push_back(JobFromProto(job));
  return sweep;
}

absl::StatusOr<Job> Client::Watch(
    const std::string& job_id,
    const std::function<void(const Job&)>& on_update) {
  return impl_->Watch(job_id, on_update);
}

void Client::CancelWatches() { impl_->CancelWatches(); }

absl::StatusOr<Job> Client::GetJob(const std::string& job_id) {
  return impl_->GetJob(job_id);
}

absl::StatusOr<Job> Client::CancelJob(const std::string& job_id) {
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  ASSIGN_OR_RETURN(v1::CancelJobResponse response,
                   impl_->Call(&v1::TuningService::Stub::CancelJob, request));
  return JobFromProto(response.job());
}

absl::StatusOr<std::vector<Job>> Client::ListJobs(int32_t limit) {
  v1::ListJobsRequest request;
  request.set_limit(limit);
  ASSIGN_OR_RETURN(v1::ListJobsResponse response,
                   impl_->Call(&v1::TuningService::Stub::ListJobs, request));
  std::vector<Job> jobs;
  for (const v1::Job& job : response.jobs()) jobs.push_back(JobFromProto(job));
  return jobs;
}

absl::StatusOr<JobPage> Client::ListJobs(const JobFilter& filter) {
  v1::ListJobsRequest request;
  request.set_limit(filter.limit);
  request.set_state(JobStateToProto(filter.state));
  request.set_kernel_name(filter.kernel);
  request.set_owner(filter.owner);
  request.set_sweep_id(filter.sweep_id);
  request.set_device_model(filter.device_model);
  request.set_page_token(filter.page_token);
  ASSIGN_OR_RETURN(v1::ListJobsResponse response,
                   impl_->Call(&v1::TuningService::Stub::ListJobs, request));
  JobPage page;
  for (const v1::Job& job : response.jobs()) page.jobs.push_back(JobFromProto(job));
  page.next_page_token = response.next_page_token();
  return page;
}

absl::StatusOr<TrialPage> Client::ListTrials(const std::string& job_id,
                                             const std::string& status, int32_t page_size,
                                             const std::string& page_token) {
  if (job_id.empty()) return absl::InvalidArgumentError("no job id given");
  v1::ListTrialsRequest request;
  request.set_job_id(job_id);
  if (!status.empty()) {
    ASSIGN_OR_RETURN(v1::TrialStatus parsed, TrialStatusFromName(status));
    request.set_status(parsed);
  }
  request.set_page_size(page_size);
  request.set_page_token(page_token);
  ASSIGN_OR_RETURN(v1::ListTrialsResponse response,
                   impl_->Call(&v1::TuningService::Stub::ListTrials, request));
  TrialPage page;
  for (const v1::TrialRecord& trial : response.trials()) page.trials.push_back(TrialFromProto(trial));
  page.next_page_token = response.next_page_token();
  return page;
}

absl::StatusOr<std::vector<KernelProfile>> Client::ProfileJob(const std::string& job_id,
                                                             int top) {
  if (job_id.empty()) return absl::InvalidArgumentError("no job id given");
  v1::ProfileJobRequest request;
  request.set_job_id(job_id);
  request.set_top(top);
  ASSIGN_OR_RETURN(v1::ProfileJobResponse response,
                   impl_->Call(&v1::TuningService::Stub::ProfileJob, request));
  std::vector<KernelProfile> profiles;
  for (const v1::KernelProfile& profile : response.queued()) {
    profiles.push_back(ProfileFromProto(profile));
  }
  return profiles;
}

absl::StatusOr<std::vector<KernelProfile>> Client::ListProfiles(const std::string& job_id) {
  if (job_id.empty()) return absl::InvalidArgumentError("no job id given");
  v1::ListProfilesRequest request;
  request.set_job_id(job_id);
  ASSIGN_OR_RETURN(v1::ListProfilesResponse response,
                   impl_->Call(&v1::TuningService::Stub::ListProfiles, request));
  std::vector<KernelProfile> profiles;
  for (const v1::KernelProfile& profile : response.profiles()) {
    profiles.push_back(ProfileFromProto(profile));
  }
  return profiles;
}

absl::StatusOr<std::vector<Trial>> Client::ListAllTrials(const std::string& job_id,
                                                        const std::string& status) {
  std::vector<Trial> trials;
  std::string token;
  do {
    ASSIGN_OR_RETURN(TrialPage page, ListTrials(job_id, status, /*page_size=*/0, token));
    for (Trial& trial : page.trials) trials.push_back(std::move(trial));
    token = std::move(page.next_page_token);
  } while (!token.empty());
  return trials;
}

absl::StatusOr<BestConfig> Client::GetBestConfig(
    const std::string& kernel, const std::string& shape,
    const std::string& device_model, const std::string& toolkit) {
  if (kernel.empty()) return absl::InvalidArgumentError("no kernel name given");
  v1::GetBestConfigRequest request;
  request.set_kernel_name(kernel);
  ASSIGN_OR_RETURN(*request.mutable_shape(), ParseShape(shape));
  request.set_device_model(device_model);
  request.set_toolkit(toolkit);
  ASSIGN_OR_RETURN(
      v1::GetBestConfigResponse response,
      impl_->Call(&v1::TuningService::Stub::GetBestConfig, request));
  return BestConfigFromProto(response);
}

const char* ClientVersion() { return kVersion; }

absl::StatusOr<std::string> Client::ServerVersion() {
  ASSIGN_OR_RETURN(v1::GetServerInfoResponse response,
                   impl_->Call(&v1::TuningService::Stub::GetServerInfo,
                               v1::GetServerInfoRequest()));
  return response.version();
}

absl::StatusOr<std::string> Client::ExportBest(const std::string& kernel,
                                               const std::string& device_model) {
  v1::ExportBestRequest request;
  request.set_kernel_name(kernel);
  request.set_device_model(device_model);
  ASSIGN_OR_RETURN(v1::ExportBestResponse response,
                   impl_->Call(&v1::TuningService::Stub::ExportBest, request));
  return client_internal::BestTableToJson(response);
}

absl::StatusOr<ImportResult> Client::ImportBest(const std::string& json,
                                                const std::string& origin, bool overwrite) {
  if (origin.empty()) return absl::InvalidArgumentError("an import needs an origin");
  ASSIGN_OR_RETURN(v1::ExportBestResponse table, client_internal::BestTableFromJson(json));
  v1::ImportBestRequest request;
  *request.mutable_kernels() = std::move(*table.mutable_kernels());
  *request.mutable_rows() = std::move(*table.mutable_rows());
  request.set_origin(origin);
  request.set_overwrite(overwrite);
  ASSIGN_OR_RETURN(v1::ImportBestResponse response,
                   impl_->Call(&v1::AdminService::Stub::ImportBest, request));
  return ImportResult{response.imported(), response.kept_measured(), response.kernels_added(),
                      response.not_served()};
}

absl::StatusOr<std::vector<WorkerInfo>> Client::ListWorkers() {
  ASSIGN_OR_RETURN(v1::ListWorkersResponse response,
                   impl_->Call(&v1::TuningService::Stub::ListWorkers,
                               v1::ListWorkersRequest()));
  std::vector<WorkerInfo> workers;
  for (const v1::WorkerInfo& worker : response.workers()) {
    workers.push_back(WorkerFromProto(worker));
  }
  return workers;
}

}  // namespace tunefleet

namespace tunefleet {
namespace {

TokenInfo TokenFromProto(const v1::TokenInfo& info) {
  return TokenInfo{info.id(), info.name(), info.role(), info.created_unix_ms(),
                   info.revoked_unix_ms()};
}

}  // namespace

absl::StatusOr<IssuedToken> Client::CreateToken(const std::string& name,
                                                const std::string& role) {
  v1::CreateTokenRequest request;
  request.set_name(name);
  request.set_role(role);
  ASSIGN_OR_RETURN(v1::CreateTokenResponse response,
                   impl_->Call(&v1::TokenService::Stub::CreateToken, request));
  return IssuedToken{TokenFromProto(response.info()), response.token()};
}

absl::StatusOr<std::vector<TokenInfo>> Client::ListTokens() {
  ASSIGN_OR_RETURN(v1::ListTokensResponse response,
                   impl_->Call(&v1::TokenService::Stub::ListTokens, v1::ListTokensRequest()));
  std::vector<TokenInfo> tokens;
  for (const v1::TokenInfo& info : response.tokens()) tokens.push_back(TokenFromProto(info));
  return tokens;
}

absl::StatusOr<TokenInfo> Client::RevokeToken(const std::string& id) {
  v1::RevokeTokenRequest request;
  request.set_id(id);
  ASSIGN_OR_RETURN(v1::RevokeTokenResponse response,
                   impl_->Call(&v1::TokenService::Stub::RevokeToken, request));
  return TokenFromProto(response.info());
}

}  // namespace tunefleet
