#include "client/tunectl/health.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/tunectl/exit_codes.h"
#include "common/grpc_security.h"
#include "common/grpc_status.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

using HealthResponse = grpc::health::v1::HealthCheckResponse;

// The serving status of `service` at `address`, or the call's error.
absl::StatusOr<HealthResponse::ServingStatus> Check(
    const std::string& address, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const std::string& service, std::chrono::milliseconds deadline) {
  std::unique_ptr<grpc::health::v1::Health::Stub> stub =
      grpc::health::v1::Health::NewStub(grpc::CreateChannel(address, credentials));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  HealthResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.status();
}

// A list of coordinators (a leader and its standbys): each one's status,
// and which leads (serves the fleet's TuningService). Exit 0 when one
// serves.
int RunListHealth(const std::vector<std::string>& addresses,
                  const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                  const ClientOptions& options, const std::string& service,
                  const Console& console) {
  nlohmann::json rows = nlohmann::json::array();
  bool any_serving = false;
  for (const std::string& address : addresses) {
    absl::StatusOr<HealthResponse::ServingStatus> status =
        Check(address, credentials, service, options.deadline);
    const bool serving = status.ok() && *status == HealthResponse::SERVING;
    any_serving = any_serving || serving;
    absl::StatusOr<HealthResponse::ServingStatus> leads =
        status.ok() ? Check(address, credentials, "tunefleet.v1.TuningService", options.deadline)
                    : status;
    const std::string name =
        status.ok() ? HealthResponse::ServingStatus_Name(*status) : "UNREACHABLE";
    const std::string role = !status.ok()                                            ? ""
                             : leads.ok() && *leads == HealthResponse::SERVING ? "leader"
                                                                                    : "standby";
    rows.push_back({{"address", address}, {"status", name}, {"role", role}});
    if (console.format != OutputFormat::kJson) {
      *console.out << address << "  " << name << (role.empty() ? "" : "  " + role) << "\n";
    }
  }
  if (console.format == OutputFormat::kJson) {
    *console.out << nlohmann::json{{"coordinators", rows}}.dump(2) << "\n";
  }
  return any_serving ? kExitOk : kExitUnavailable;
}

}  // namespace

int RunHealth(const ClientOptions& options, const std::string& service, const Console& console) {
  ChannelSecurity security;
  security.insecure = options.insecure;
  security.ca_file = options.ca_file;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(security);
  if (!credentials.ok()) return ReportError(console, credentials.status());
  std::vector<std::string> addresses;
  for (absl::string_view item : absl::StrSplit(options.target, ',', absl::SkipWhitespace())) {
    addresses.emplace_back(absl::StripAsciiWhitespace(item));
  }
  if (addresses.size() > 1) {
    return RunListHealth(addresses, *credentials, options, service, console);
  }
  absl::StatusOr<HealthResponse::ServingStatus> status =
      Check(options.target, *credentials, service, options.deadline);
  if (!status.ok()) return ReportError(console, status.status());
  const std::string name = HealthResponse::ServingStatus_Name(*status);
  if (console.format == OutputFormat::kJson) {
    *console.out << nlohmann::json{{"status", name}}.dump(2) << "\n";
  } else {
    *console.out << name << "\n";
  }
  return *status == HealthResponse::SERVING ? kExitOk : kExitUnavailable;
}

}  // namespace tunefleet::tunectl
