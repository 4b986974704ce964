#include "worker/coordinator_link.h"

#include <algorithm>
#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/coordinator_channel.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "tunefleet/v1/worker_service.grpc.pb.h"

namespace tunefleet::worker {
namespace {

class GrpcCoordinator : public Coordinator {
 public:
  GrpcCoordinator(const CoordinatorTarget& target, const CoordinatorLinkOptions& options,
                  std::shared_ptr<grpc::ChannelCredentials> credentials)
      : options_(options), target_(target.target), credentials_(std::move(credentials)) {
    args_.SetMaxReceiveMessageSize(options.max_message_bytes);
    args_.SetMaxSendMessageSize(options.max_message_bytes);
    // gRPC's first retry comes after 1 s and grows from there; a restarted
    // coordinator is found sooner when the retries start at 250 ms and stay
    // under the cap. (The connect attempt itself keeps gRPC's 20 s minimum,
    // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, so a slow TLS handshake succeeds.)
    const int cap = static_cast<int>(absl::ToInt64Milliseconds(options.max_reconnect_backoff));
    args_.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, std::min(cap, 250));
    args_.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, cap);
    // Subchannels of this worker's own: a fresh channel (Unavailable below)
    // must not find the old one's, backing off, in gRPC's global pool.
    args_.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    UseLeadingCoordinator(target, v1::WorkerService::service_full_name(), &args_);
    Reconnect();
  }

  absl::StatusOr<v1::RegisterWorkerResponse> RegisterWorker(
      const v1::RegisterWorkerRequest& request) override {
    absl::StatusOr<v1::RegisterWorkerResponse> response =
        Unary(&v1::WorkerService::Stub::RegisterWorker, request, options_.call_timeout);
    if (response.ok()) {
      absl::MutexLock lock(&mu_);
      worker_id_ = response->worker_id();
    }
    return response;
  }

  absl::StatusOr<v1::LeaseWorkResponse> LeaseWork(
      const v1::LeaseWorkRequest& request) override {
    grpc::ClientContext context;
    context.set_deadline(Deadline(options_.call_timeout + absl::Milliseconds(request.wait_ms())));
    {
      absl::MutexLock lock(&mu_);
      if (interrupted_) return absl::CancelledError("lease waits interrupted");
      waiting_.insert(&context);
    }
    v1::LeaseWorkResponse response;
    grpc::Status status = Stub()->LeaseWork(&context, request, &response);
    {
      absl::MutexLock lock(&mu_);
      waiting_.erase(&context);
    }
    if (!status.ok()) return Failed(status);
    return response;
  }

  absl::StatusOr<v1::ReportResultsResponse> ReportResults(
      const v1::ReportResultsRequest& request) override {
    return Unary(&v1::WorkerService::Stub::ReportResults, request, options_.call_timeout);
  }

  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request) override {
    return Unary(&v1::WorkerService::Stub::Heartbeat, request, options_.call_timeout);
  }

  absl::StatusOr<std::string> GetBlob(const std::string& digest) override {
    // The coordinator serves a worker only the sources of its own leases.
    v1::GetBlobRequest request = Stamped<v1::GetBlobRequest>();
    request.set_digest(digest);
    absl::StatusOr<v1::GetBlobResponse> response =
        Unary(&v1::WorkerService::Stub::GetBlob, request, options_.call_timeout);
    if (!response.ok()) return response.status();
    return std::move(*response->mutable_content());
  }

  absl::StatusOr<v1::Artifact> GetArtifact(const std::string& key) override {
    v1::GetArtifactRequest request = Stamped<v1::GetArtifactRequest>();
    request.set_key(key);
    absl::StatusOr<v1::GetArtifactResponse> response =
        Unary(&v1::WorkerService::Stub::GetArtifact, request, options_.call_timeout);
    if (!response.ok()) return response.status();
    return std::move(*response->mutable_artifact());
  }

  absl::Status PutArtifact(const v1::PutArtifactRequest& work) override {
    v1::PutArtifactRequest request = Stamped<v1::PutArtifactRequest>();
    request.set_key(work.key());
    *request.mutable_artifact() = work.artifact();
    request.set_job_id(work.job_id());
    *request.mutable_config() = work.config();
    request.set_reference(work.reference());
    return Unary(&v1::WorkerService::Stub::PutArtifact, request, options_.call_timeout).status();
  }

  absl::StatusOr<v1::GetCompileWorkResponse> GetCompileWork(
      const v1::GetCompileWorkRequest& request) override {
    return Unary(&v1::WorkerService::Stub::GetCompileWork, request, options_.call_timeout);
  }

  void InterruptLeaseWaits() override {
    absl::MutexLock lock(&mu_);
    interrupted_ = true;
    for (grpc::ClientContext* context : waiting_) context->TryCancel();
  }

 private:
  // A request carrying the id this worker registered with (the calls that
  // take no request from the daemon: blobs and artifacts are its own).
  template <typename Request>
  Request Stamped() {
    Request request;
    absl::MutexLock lock(&mu_);
    request.set_worker_id(worker_id_);
    return request;
  }

  static std::chrono::system_clock::time_point Deadline(absl::Duration timeout) {
    return absl::ToChronoTime(absl::Now() + timeout);
  }

  template <typename Request, typename Response>
  absl::StatusOr<Response> Unary(
      grpc::Status (v1::WorkerService::Stub::*method)(grpc::ClientContext*, const Request&,
                                                       Response*),
      const Request& request, absl::Duration timeout) {
    grpc::ClientContext context;
    context.set_deadline(Deadline(timeout));
    Response response;
    grpc::Status status = (Stub().get()->*method)(&context, request, &response);
    if (!status.ok()) return Failed(status);
    return response;
  }

  // A fresh channel and its stub. REQUIRES: mu_ held, or the constructor.
  void Reconnect() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    channel_ = grpc::CreateCustomChannel(target_, credentials_, args_);
    stub_ = v1::WorkerService::NewStub(channel_);
  }

  std::shared_ptr<v1::WorkerService::Stub> Stub() {
    absl::MutexLock lock(&mu_);
    return stub_;
  }

  // The status of a failed call. A channel that found no coordinator keeps
  // failing calls at once for seconds after one listens again (its
  // subchannels back off, TRANSIENT_FAILURE): then the next calls go over a
  // fresh channel, at most one a second, so a restarted coordinator, or a
  // standby that took over, is reached at the worker's next retry. An
  // Unavailable the coordinator answered itself (its store is down) keeps
  // the channel: a fleet of workers must not reconnect every second to a
  // coordinator that is up.
  absl::Status Failed(const grpc::Status& status) {
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      const absl::Time now = absl::Now();
      absl::MutexLock lock(&mu_);
      if (now - fresh_since_ >= kFreshChannelEvery &&
          channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_TRANSIENT_FAILURE) {
        fresh_since_ = now;
        Reconnect();
      }
    }
    return FromGrpcStatus(status);
  }

  static constexpr absl::Duration kFreshChannelEvery = absl::Seconds(1);

  const CoordinatorLinkOptions options_;
  const std::string target_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  grpc::ChannelArguments args_;
  absl::Mutex mu_;
  std::shared_ptr<grpc::Channel> channel_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<v1::WorkerService::Stub> stub_ ABSL_GUARDED_BY(mu_);
  absl::Time fresh_since_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool interrupted_ ABSL_GUARDED_BY(mu_) = false;
  std::string worker_id_ ABSL_GUARDED_BY(mu_);  // from the last registration
  absl::flat_hash_set<grpc::ClientContext*> waiting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<Coordinator>> CreateGrpcCoordinator(
    const std::string& target, const CoordinatorLinkOptions& options) {
  ASSIGN_OR_RETURN(CoordinatorTarget parsed, ParseCoordinatorTarget(target));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                   MakeChannelCredentials(options.security));
  return std::make_unique<GrpcCoordinator>(parsed, options, std::move(credentials));
}

}  // namespace tunefleet::worker
