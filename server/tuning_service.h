// The gRPC adapter of TuningService: proto in, one JobManager (or
// BestConfigIndex) call, proto out. No logic of its own beyond request-shape
// checks.
#ifndef TUNEFLEET_SERVER_TUNING_SERVICE_H_
#define TUNEFLEET_SERVER_TUNING_SERVICE_H_

#include "server/auth_processor.h"
#include "server/best_config_index.h"
#include "server/best_transfer.h"
#include "server/fleet_names.h"
#include "server/job_history.h"
#include "server/job_manager.h"
#include "server/sweeps.h"
#include "server/profile_manager.h"
#include "server/job_watches.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet::server {

// GetBestConfig, the call every application makes at start-up, uses gRPC's
// callback API: it never blocks (an index lookup), so it runs on gRPC's own
// threads without a hand-off to the sync pool. WatchJob does too: a stream
// holds no thread while it waits for changes (JobWatches). The others may
// wait on the store and run on the sync server's threads.
using TuningServiceBase = v1::TuningService::WithCallbackMethod_GetBestConfig<
    v1::TuningService::WithCallbackMethod_WatchJob<v1::TuningService::Service>>;

// Thread-safety: safe for concurrent use.
class TuningServiceImpl final : public TuningServiceBase {
 public:
  // Every pointer must outlive the service. `names` checks the kernel and
  // device model a read names (GetBestConfig, ListJobs, ExportBest): one
  // nothing knows is NOT_FOUND, listing the known names. `watches` bounds
  // the WatchJob streams (RESOURCE_EXHAUSTED beyond) and writes them.
  TuningServiceImpl(JobManager* jobs, WorkerRegistry* workers,
                    const BestConfigIndex* best_configs, JobHistory* history,
                    BestTransfer* transfer, ProfileManager* profiles, const FleetNames* names,
                    JobWatches* watches, const Callers* callers);

  grpc::Status SubmitJob(grpc::ServerContext* context, const v1::SubmitJobRequest* request,
                         v1::SubmitJobResponse* response) override;
  grpc::Status SubmitSweep(grpc::ServerContext* context, const v1::SubmitSweepRequest* request,
                           v1::SubmitSweepResponse* response) override;
  grpc::Status GetJob(grpc::ServerContext* context, const v1::GetJobRequest* request,
                      v1::GetJobResponse* response) override;
  grpc::ServerWriteReactor<v1::WatchJobEvent>* WatchJob(
      grpc::CallbackServerContext* context, const v1::WatchJobRequest* request) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const v1::CancelJobRequest* request,
                         v1::CancelJobResponse* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status ListTrials(grpc::ServerContext* context, const v1::ListTrialsRequest* request,
                          v1::ListTrialsResponse* response) override;
  grpc::Status ProfileJob(grpc::ServerContext* context, const v1::ProfileJobRequest* request,
                          v1::ProfileJobResponse* response) override;
  grpc::Status ListProfiles(grpc::ServerContext* context, const v1::ListProfilesRequest* request,
                            v1::ListProfilesResponse* response) override;
  grpc::ServerUnaryReactor* GetBestConfig(grpc::CallbackServerContext* context,
                                          const v1::GetBestConfigRequest* request,
                                          v1::GetBestConfigResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context, const v1::ListWorkersRequest* request,
                           v1::ListWorkersResponse* response) override;
  grpc::Status GetServerInfo(grpc::ServerContext* context,
                             const v1::GetServerInfoRequest* request,
                             v1::GetServerInfoResponse* response) override;
  grpc::Status ExportBest(grpc::ServerContext* context, const v1::ExportBestRequest* request,
                          v1::ExportBestResponse* response) override;

 private:
  JobManager* const jobs_;
  SweepSubmitter sweeps_;  // over jobs_
  WorkerRegistry* const workers_;
  const BestConfigIndex* const best_configs_;
  JobHistory* const history_;
  BestTransfer* const transfer_;
  ProfileManager* const profiles_;
  const FleetNames* const names_;
  JobWatches* const watches_;
  const Callers* const callers_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_TUNING_SERVICE_H_
