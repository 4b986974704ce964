#include "client/tunectl/admin.h"

#include <grpcpp/grpcpp.h>

#include <memory>

#include "client/tunectl/exit_codes.h"
#include "common/coordinator_channel.h"
#include "common/grpc_security.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "tunefleet/v1/admin_service.grpc.pb.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet::tunectl {
namespace {

// Over the same TLS, CA and token as every other call of tunectl.
absl::StatusOr<std::unique_ptr<v1::AdminService::Stub>> AdminStub(const ClientOptions& options) {
  ChannelSecurity security;
  security.insecure = options.insecure;
  security.ca_file = options.ca_file;
  security.token = options.token;
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                   MakeChannelCredentials(security));
  ASSIGN_OR_RETURN(CoordinatorTarget target, ParseCoordinatorTarget(options.target));
  // Only the leader serves; it serves TuningService and AdminService alike.
  grpc::ChannelArguments args;
  UseLeadingCoordinator(target, v1::TuningService::service_full_name(), &args);
  return v1::AdminService::NewStub(grpc::CreateCustomChannel(target.target, credentials, args));
}

void SetDeadline(const ClientOptions& options, grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + options.deadline);
}

// `worker`: the request named one, so its principal's artifacts were dropped.
void PrintInvalidation(const v1::InvalidateTrialsResponse& response, bool worker,
                       const Console& console) {
  if (console.format == OutputFormat::kJson) {
    nlohmann::json json = {{"trials_excluded", response.trials_excluded()},
                           {"keys_changed", response.keys_changed()},
                           {"artifacts_dropped", response.artifacts_dropped()},
                           {"tuning_keys", nlohmann::json::array()}};
    for (const std::string& key : response.tuning_keys()) json["tuning_keys"].push_back(key);
    *console.out << json.dump(2) << "\n";
    return;
  }
  *console.out << response.trials_excluded() << " trials excluded; " << response.keys_changed()
               << " best configs changed (of " << response.tuning_keys_size()
               << " tuning keys touched)";
  if (worker) *console.out << "; " << response.artifacts_dropped() << " shared artifacts dropped";
  *console.out << "\n";
}

}  // namespace

int RunAdminInvalidate(const ClientOptions& options, const InvalidateFlags& flags,
                       const Console& console) {
  if (flags.worker.empty() && flags.tuning_key.empty() && flags.job_id.empty()) {
    *console.err << "tunectl: admin invalidate needs --worker, --key or --job\n";
    return kExitUsage;
  }
  v1::InvalidateTrialsRequest request;
  request.set_worker(flags.worker);
  request.set_tuning_key(flags.tuning_key);
  request.set_job_id(flags.job_id);
  v1::InvalidateTrialsResponse response;
  grpc::ClientContext context;
  SetDeadline(options, &context);
  absl::StatusOr<std::unique_ptr<v1::AdminService::Stub>> stub = AdminStub(options);
  if (!stub.ok()) return ReportError(console, stub.status());
  grpc::Status status = (*stub)->InvalidateTrials(&context, request, &response);
  if (!status.ok()) return ReportError(console, FromGrpcStatus(status));
  PrintInvalidation(response, !flags.worker.empty(), console);
  return kExitOk;
}

int RunAdminRelease(const ClientOptions& options, const std::string& principal,
                    const Console& console) {
  v1::ReleaseWorkerRequest request;
  request.set_principal(principal);
  v1::ReleaseWorkerResponse response;
  grpc::ClientContext context;
  SetDeadline(options, &context);
  absl::StatusOr<std::unique_ptr<v1::AdminService::Stub>> stub = AdminStub(options);
  if (!stub.ok()) return ReportError(console, stub.status());
  grpc::Status status = (*stub)->ReleaseWorker(&context, request, &response);
  if (!status.ok()) return ReportError(console, FromGrpcStatus(status));
  *console.out << (response.released() ? "released " : "not quarantined: ") << principal << "\n";
  return kExitOk;
}

}  // namespace tunefleet::tunectl
