#include "server/admin_service.h"

#include "common/grpc_status.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {

AdminServiceImpl::AdminServiceImpl(BestKeeper* keeper, QuarantineList* quarantine,
                                   CoordinatorMetrics* metrics, BestTransfer* transfer,
                                   SharedArtifacts* artifacts, WorkerRegistry* workers)
    : keeper_(keeper),
      quarantine_(quarantine),
      metrics_(metrics),
      transfer_(transfer),
      artifacts_(artifacts),
      workers_(workers) {}

grpc::Status AdminServiceImpl::ImportBest(grpc::ServerContext*,
                                          const v1::ImportBestRequest* request,
                                          v1::ImportBestResponse* response) {
  absl::StatusOr<ImportSummary> summary = transfer_->Import(*request);
  if (!summary.ok()) return ToGrpcStatus(summary.status());
  std::cerr << "tunefleet-coordinator: imported " << summary->imported << " best configs from \""
            << request->origin() << "\" (" << summary->kept_measured << " kept measured, "
            << summary->kernels_added << " kernels added)" << std::endl;
  response->set_imported(summary->imported);
  response->set_kept_measured(summary->kept_measured);
  response->set_kernels_added(summary->kernels_added);
  response->set_not_served(summary->not_served);
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::InvalidateTrials(grpc::ServerContext*,
                                                const v1::InvalidateTrialsRequest* request,
                                                v1::InvalidateTrialsResponse* response) {
  TrialFilter filter{request->worker(), request->tuning_key(), request->job_id()};
  absl::Status valid = CheckFilter(filter);
  if (!valid.ok()) return ToGrpcStatus(valid);
  absl::StatusOr<InvalidationResult> result = keeper_->Invalidate(filter);
  if (!result.ok()) return ToGrpcStatus(result.status());
  spdlog::warn("invalidated {} trials (worker \"{}\" key \"{}\" job \"{}\"); {} best configs "
               "changed",
               result->trials, filter.worker, filter.tuning_key, filter.job_id, result->keys);
  if (!filter.worker.empty()) {
    // The artifacts its principal shared go too: the registry's word for a
    // worker it knows; for one it forgot, the principal that measured the
    // rows just excluded; else `worker` names the principal itself.
    std::vector<std::string> principals;
    if (absl::StatusOr<std::string> principal = workers_->PrincipalOf(filter.worker);
        principal.ok()) {
      principals = {*principal};
    } else if (!result->principals.empty()) {
      principals = result->principals;
    } else {
      principals = {filter.worker};
    }
    int64_t dropped = 0;
    for (const std::string& principal : principals) dropped += artifacts_->Purge(principal);
    response->set_artifacts_dropped(dropped);
  }
  response->set_trials_excluded(result->trials);
  response->set_keys_changed(result->keys);
  for (const std::string& key : result->tuning_keys) response->add_tuning_keys(key);
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::ReleaseWorker(grpc::ServerContext*,
                                             const v1::ReleaseWorkerRequest* request,
                                             v1::ReleaseWorkerResponse* response) {
  if (request->principal().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "principal is required");
  }
  absl::StatusOr<bool> released = quarantine_->Release(request->principal());
  if (!released.ok()) return ToGrpcStatus(released.status());
  if (metrics_ != nullptr) metrics_->WorkersQuarantined(static_cast<int>(quarantine_->size()));
  response->set_released(*released);
  return grpc::Status::OK;
}

}  // namespace tunefleet::server
