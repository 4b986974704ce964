#include "client/tunectl/health.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>

#include "client/tunectl/exit_codes.h"
#include "common/grpc_security.h"
#include "common/grpc_status.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {

using HealthResponse = grpc::health::v1::HealthCheckResponse;

int RunHealth(const ClientOptions& options, const std::string& service, const Console& console) {
  ChannelSecurity security;
  security.insecure = options.insecure;
  security.ca_file = options.ca_file;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(security);
  if (!credentials.ok()) return ReportError(console, credentials.status());
  std::unique_ptr<grpc::health::v1::Health::Stub> stub =
      grpc::health::v1::Health::NewStub(grpc::CreateChannel(options.target, *credentials));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  HealthResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options.deadline);
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return ReportError(console, FromGrpcStatus(status));
  const std::string name = HealthResponse::ServingStatus_Name(response.status());
  if (console.format == OutputFormat::kJson) {
    *console.out << nlohmann::json{{"status", name}}.dump(2) << "\n";
  } else {
    *console.out << name << "\n";
  }
  return response.status() == HealthResponse::SERVING ? kExitOk : kExitUnavailable;
}

}  // namespace tunefleet::tunectl
