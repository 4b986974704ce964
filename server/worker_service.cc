#include "server/worker_service.h"

#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "common/tuning_key.h"
#include "server/auth_processor.h"

namespace tunefleet::server {
namespace {

absl::Status MissingFieldError(const char* field) {
  return absl::InvalidArgumentError(absl::StrCat(field, " is required"));
}

// The identity of a registering worker. Until workers present client
// certificates this is the host the worker names (one principal per host:
// its devices vouch for nothing about each other); with mutual TLS it becomes
// the certificate's identity, here and nowhere else.
// A worker's principal: its certificate's identity; without authentication
// (--insecure), the host it names, which nothing vouches for.
std::string PrincipalOf(const Caller& caller, const v1::RegisterWorkerRequest& request) {
  if (caller.authenticated) return caller.principal;
  return request.host().empty() ? std::string("host:unnamed") : "host:" + request.host();
}

// 90 for "sm_90" or "sm_90a"; nullopt for anything else.
std::optional<int> ComputeCapabilityOf(absl::string_view arch) {
  if (!absl::ConsumePrefix(&arch, "sm_")) return std::nullopt;
  absl::ConsumeSuffix(&arch, "a");
  int value = 0;
  if (arch.size() < 2 || arch.size() > 3 || !absl::SimpleAtoi(arch, &value)) return std::nullopt;
  return value;
}

ResultReport FromProto(const v1::ReportResultsRequest& request) {
  ResultReport report;
  report.worker_id = request.worker_id();
  report.lease_id = request.lease_id();
  report.epoch = request.epoch();
  report.release = request.release();
  report.receipt = request.receipt();
  report.trials.reserve(request.trials_size());
  for (const v1::ReportedTrial& trial : request.trials()) {
    report.trials.emplace_back(static_cast<uint64_t>(trial.index()), trial.result());
  }
  return report;
}

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(JobManager* jobs, WorkerRegistry* workers,
                                     LongPolls* long_polls, SourceBlobs* blobs,
                                     CallPool* reports, CallPool* leases,
                                     absl::Duration heartbeat_interval,
                                     absl::Duration lease_ttl, std::vector<LeaseSource*> sources,
                                     SharedArtifacts* artifacts, const Callers* callers)
    : jobs_(jobs),
      sources_(std::move(sources)),
      workers_(workers),
      long_polls_(long_polls),
      blobs_(blobs),
      artifacts_(artifacts),
      reports_(reports),
      leases_(leases),
      heartbeat_interval_(heartbeat_interval),
      lease_ttl_(lease_ttl),
      callers_(callers) {}

grpc::Status WorkerServiceImpl::RegisterWorker(grpc::ServerContext* context,
                                               const v1::RegisterWorkerRequest* request,
                                               v1::RegisterWorkerResponse* response) {
  if (!request->compile_target().empty() &&
      !ComputeCapabilityOf(request->compile_target()).has_value()) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        "compile_target is a CUDA arch: sm_ and its compute capability (sm_90, sm_90a)"));
  }
  if (request->devices_size() > 0 &&
      request->measurement_protocol() != kMeasurementProtocolVersion) {
    return ToGrpcStatus(absl::FailedPreconditionError(absl::StrCat(
        "this worker measures under measurement protocol ", request->measurement_protocol(),
        " and the coordinator stores results under protocol ", kMeasurementProtocolVersion,
        " (docs/measurement.md): run a worker of the coordinator's release")));
  }
  absl::StatusOr<Caller> caller = callers_->Of(*context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  WorkerRegistration registration{request->host(),
                                  {request->devices().begin(), request->devices().end()},
                                  request->toolkit(), PrincipalOf(*caller, *request),
                                  request->compile_target()};
  absl::StatusOr<std::string> id = workers_->Register(registration);
  if (!id.ok()) return ToGrpcStatus(id.status());
  jobs_->OnWorkerRegistered();
  response->set_worker_id(*id);
  response->set_heartbeat_interval_ms(absl::ToInt64Milliseconds(heartbeat_interval_));
  response->set_lease_ttl_ms(absl::ToInt64Milliseconds(lease_ttl_));
  for (std::string& key : artifacts_->Unshared(registration.principal)) {
    response->add_unshared_artifacts(std::move(key));
  }
  return grpc::Status::OK;
}

absl::Status WorkerServiceImpl::CheckActsFor(const grpc::ServerContextBase& context,
                                             const std::string& worker_id) {
  absl::StatusOr<Caller> caller = callers_->Of(context);
  if (!caller.ok()) return caller.status();
  if (!caller->authenticated) return absl::OkStatus();
  absl::StatusOr<std::string> principal = workers_->PrincipalOf(worker_id);
  if (!principal.ok() || *principal == caller->principal) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("worker ", worker_id, " registered with "
                                                  "another certificate than ", caller->principal));
}

grpc::ServerUnaryReactor* WorkerServiceImpl::LeaseWork(grpc::CallbackServerContext* context,
                                                       const v1::LeaseWorkRequest* request,
                                                       v1::LeaseWorkResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status worker = CheckWorker(*context, request->worker_id()); !worker.ok()) {
    reactor->Finish(ToGrpcStatus(worker));
    return reactor;
  }
  LeaseQuery query{request->worker_id(), request->device_id(), request->max_trials()};
  const absl::Duration wait = absl::Milliseconds(std::max<int64_t>(0, request->wait_ms()));
  auto first_try = [this, context, reactor, response, query = std::move(query), wait] {
    long_polls_->Wait(
        query, wait,
        [reactor, response](LongPolls::Result result) {
          if (!result.ok()) {
            reactor->Finish(ToGrpcStatus(result.status()));
            return;
          }
          if (result->has_value()) *response->mutable_lease() = LeaseToProto(**result);
          reactor->Finish(grpc::Status::OK);
        },
        [context] { return context->IsCancelled(); });
  };
  if (leases_ != nullptr) {
    leases_->Run(std::move(first_try));
  } else {
    first_try();
  }
  return reactor;
}

grpc::ServerUnaryReactor* WorkerServiceImpl::ReportResults(
    grpc::CallbackServerContext* context, const v1::ReportResultsRequest* request,
    v1::ReportResultsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // A missing id is named before the caller's certificate is checked.
  const absl::Status worker = !request->worker_id().empty() && request->lease_id().empty()
                                  ? MissingFieldError("lease_id")
                                  : CheckWorker(*context, request->worker_id());
  if (!worker.ok()) {
    reactor->Finish(ToGrpcStatus(worker));
    return reactor;
  }
  if (!request->receipt().empty() && !workers_->PrincipalOf(request->worker_id()).ok()) {
    // This process does not know the worker (it restarted, or took over):
    // the lease is adopted once the worker registers again and reports it.
    reactor->Finish(ToGrpcStatus(absl::NotFoundError(
        absl::StrCat("unknown worker ", request->worker_id(),
                     ": register again, then report the lease under the new worker id"))));
    return reactor;
  }
  reports_->Run([this, reactor, report = FromProto(*request), response] {
    // A lease no source granted is gone as far as the worker is concerned.
    absl::StatusOr<ReportAck> ack = ReportAck::Cancelled();
    for (LeaseSource* source : sources_) {
      if (source->Grants(report.lease_id)) {
        ack = source->Report(report);
        break;
      }
    }
    if (!ack.ok()) {
      reactor->Finish(ToGrpcStatus(ack.status()));
      return;
    }
    response->set_cancelled(ack->cancelled);
    if (!ack->cancelled) {
      response->set_expires_unix_ms(absl::ToUnixMillis(ack->expires));
      response->set_best_seconds(ack->best_seconds);
      response->set_lease_id(ack->adopted_lease_id);
      response->set_epoch(ack->adopted_epoch);
    }
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* WorkerServiceImpl::Heartbeat(grpc::CallbackServerContext* context,
                                                       const v1::HeartbeatRequest* request,
                                                       v1::HeartbeatResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status worker = CheckWorker(*context, request->worker_id()); !worker.ok()) {
    reactor->Finish(ToGrpcStatus(worker));
    return reactor;
  }
  if (workers_->Touch(request->worker_id())) {
    for (LeaseSource* source : sources_) source->RenewLeases(request->worker_id());
    if (artifacts_->conflicts() > 0) {  // rare: a principal lookup only then
      if (absl::StatusOr<std::string> principal = workers_->PrincipalOf(request->worker_id());
          principal.ok()) {
        for (std::string& key : artifacts_->Unshared(*principal)) {
          response->add_unshared_artifacts(std::move(key));
        }
      }
    }
  } else {
    response->set_reregister(true);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::Status WorkerServiceImpl::GetBlob(grpc::ServerContext* context,
                                        const v1::GetBlobRequest* request,
                                        v1::GetBlobResponse* response) {
  if (request->digest().empty()) return MissingField("digest");
  if (absl::Status worker = CheckWorker(*context, request->worker_id()); !worker.ok()) {
    return ToGrpcStatus(worker);
  }
  // OK from any source serves it; else the last source's refusal is answered.
  absl::Status leased = absl::PermissionDeniedError("sources are served only for leased work");
  for (LeaseSource* source : sources_) {
    leased = source->CheckBlobLeased(request->worker_id(), request->digest());
    if (leased.ok()) break;
  }
  if (!leased.ok()) return ToGrpcStatus(leased);
  absl::StatusOr<std::string> blob = blobs_->Get(request->digest());
  if (!blob.ok()) return ToGrpcStatus(blob.status());
  response->set_content(*std::move(blob));
  return grpc::Status::OK;
}

absl::Status WorkerServiceImpl::CheckWorker(const grpc::ServerContextBase& context,
                                            const std::string& worker_id) {
  if (worker_id.empty()) return MissingFieldError("worker_id");
  return CheckActsFor(context, worker_id);
}

absl::StatusOr<v1::WorkerInfo> WorkerServiceImpl::RegisteredWorker(
    const grpc::ServerContextBase& context, const std::string& worker_id) {
  RETURN_IF_ERROR(CheckWorker(context, worker_id));
  return workers_->Info(worker_id);  // NotFound: register again
}

grpc::Status WorkerServiceImpl::GetArtifact(grpc::ServerContext* context,
                                            const v1::GetArtifactRequest* request,
                                            v1::GetArtifactResponse* response) {
  absl::StatusOr<v1::WorkerInfo> worker = RegisteredWorker(*context, request->worker_id());
  if (!worker.ok()) return ToGrpcStatus(worker.status());
  absl::StatusOr<v1::Artifact> artifact = artifacts_->Get(worker->principal(), request->key());
  if (!artifact.ok()) return ToGrpcStatus(artifact.status());
  *response->mutable_artifact() = *std::move(artifact);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::PutArtifact(grpc::ServerContext* context,
                                            const v1::PutArtifactRequest* request,
                                            v1::PutArtifactResponse*) {
  absl::StatusOr<v1::WorkerInfo> worker = RegisteredWorker(*context, request->worker_id());
  if (!worker.ok()) return ToGrpcStatus(worker.status());
  if (absl::Status key = CheckArtifactKey(request->key()); !key.ok()) return ToGrpcStatus(key);
  if (request->artifact().content().empty()) return MissingField("artifact.content");
  if (request->job_id().empty()) return MissingField("job_id");
  // Only for work the worker holds: a key it was never leased is refused.
  absl::Status leased = absl::PermissionDeniedError("artifacts are accepted only for leased work");
  for (LeaseSource* source : sources_) {
    leased = source->CheckArtifactLeased(request->worker_id(), request->job_id(),
                                         request->config(), request->reference());
    if (leased.ok()) break;
  }
  if (!leased.ok()) return ToGrpcStatus(leased);
  const ArtifactPublisher publisher{worker->principal(), request->worker_id(),
                                    request->job_id()};
  return ToGrpcStatus(artifacts_->Put(publisher, request->key(), request->artifact()));
}

grpc::Status WorkerServiceImpl::GetCompileWork(grpc::ServerContext* context,
                                               const v1::GetCompileWorkRequest* request,
                                               v1::GetCompileWorkResponse* response) {
  if (request->max_configs() < 0) {
    return ToGrpcStatus(absl::InvalidArgumentError("max_configs must not be negative"));
  }
  absl::StatusOr<v1::WorkerInfo> worker = RegisteredWorker(*context, request->worker_id());
  if (!worker.ok()) return ToGrpcStatus(worker.status());
  const std::optional<int> capability = ComputeCapabilityOf(worker->compile_target());
  if (!capability.has_value()) {
    return ToGrpcStatus(absl::FailedPreconditionError(absl::StrCat(
        "worker ", request->worker_id(), " did not register compile-only")));
  }
  workers_->Touch(request->worker_id());
  CompileQuery query{worker->toolkit(), *capability, request->max_configs(),
                     request->worker_id()};
  for (CompileGrant& grant : jobs_->ProposeCompiles(query)) {
    v1::CompileWork* work = response->add_work();
    work->set_job_id(grant.job_id);
    *work->mutable_kernel() = grant.spec->kernel();
    *work->mutable_shape() = grant.spec->shape();
    *work->mutable_device() = std::move(grant.device);
    for (const v1::SourceFile& file : grant.spec->sources()) {
      v1::SourceFile* source = work->add_sources();
      *source = file;
      absl::StatusOr<std::string> content = blobs_->Get(file.digest());
      if (!content.ok()) return ToGrpcStatus(content.status());
      source->set_content(*std::move(content));
    }
    for (v1::Config& config : grant.configs) *work->add_configs() = std::move(config);
  }
  return grpc::Status::OK;
}

}  // namespace tunefleet::server
