// The AdminService adapter: operator repairs of served best configs
// (invalidating trials, lifting a quarantine, importing an exported table)
// over the BestKeeper, the QuarantineList and the BestTransfer. Sync methods: they are rare and wait on the store.
#ifndef TUNEFLEET_SERVER_ADMIN_SERVICE_H_
#define TUNEFLEET_SERVER_ADMIN_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "server/best_keeper.h"
#include "server/best_transfer.h"
#include "server/metrics.h"
#include "server/quarantine.h"
#include "server/shared_artifacts.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/admin_service.grpc.pb.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use.
class AdminServiceImpl final : public v1::AdminService::Service {
 public:
  // Every pointer must outlive the service; `metrics` may be null.
  AdminServiceImpl(BestKeeper* keeper, QuarantineList* quarantine,
                   CoordinatorMetrics* metrics, BestTransfer* transfer,
                   SharedArtifacts* artifacts, WorkerRegistry* workers);

  // INVALID_ARGUMENT when no field is set. With a worker, its principal's
  // shared artifacts are dropped too (the principal of the registered
  // worker of that id, else the principal named).
  grpc::Status InvalidateTrials(grpc::ServerContext* context,
                                const v1::InvalidateTrialsRequest* request,
                                v1::InvalidateTrialsResponse* response) override;
  // INVALID_ARGUMENT without a principal.
  grpc::Status ReleaseWorker(grpc::ServerContext* context,
                             const v1::ReleaseWorkerRequest* request,
                             v1::ReleaseWorkerResponse* response) override;
  // INVALID_ARGUMENT without an origin, or for a row that does not parse.
  grpc::Status ImportBest(grpc::ServerContext* context, const v1::ImportBestRequest* request,
                          v1::ImportBestResponse* response) override;

 private:
  BestKeeper* const keeper_;
  QuarantineList* const quarantine_;
  CoordinatorMetrics* const metrics_;
  BestTransfer* const transfer_;
  SharedArtifacts* const artifacts_;
  WorkerRegistry* const workers_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_ADMIN_SERVICE_H_
