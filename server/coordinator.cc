#include "server/coordinator.h"

#include <filesystem>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "server/prometheus_metrics.h"
#include "server/store/store.h"
#include "server/tuning_service.h"
#include "server/worker_registry.h"
#include "server/worker_service.h"

namespace tunefleet::server {
int Coordinator::metrics_port() const { return metrics_ == nullptr ? 0 : metrics_->port(); }

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Start(
    const CoordinatorOptions& options) {
  std::unique_ptr<Coordinator> coordinator(new Coordinator());
  RETURN_IF_ERROR(coordinator->Init(options));
  return coordinator;
}

absl::Status Coordinator::Init(const CoordinatorOptions& options) {
  std::string url = options.database_url;
  if (url.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.data_dir, error);
    std::filesystem::path dir = std::filesystem::absolute(options.data_dir, error);
    url = absl::StrCat("sqlite://", dir.string(), "/tunefleet.db");
  }
  if (!options.metrics_listen.empty()) {
    ASSIGN_OR_RETURN(metrics_, PrometheusMetrics::Start(options.metrics_listen, kVersion));
  }
  ASSIGN_OR_RETURN(store_, OpenStore(url));
  auto clock = [] { return absl::Now(); };
  workers_ = std::make_unique<WorkerRegistry>(3 * options.heartbeat_interval, clock);
  jobs_ = std::make_unique<JobManager>(options.jobs, store_.get(), workers_.get(), clock,
                                       metrics_.get());
  RETURN_IF_ERROR(jobs_->Recover());
  tuning_service_ =
      std::make_unique<TuningServiceImpl>(jobs_.get(), workers_.get(), store_.get());
  worker_service_ = std::make_unique<WorkerServiceImpl>(
      jobs_.get(), workers_.get(), options.heartbeat_interval, options.jobs.lease_ttl);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &port_);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.RegisterService(tuning_service_.get());
  builder.RegisterService(worker_service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }
  server_->GetHealthCheckService()->SetServingStatus(true);
  ticker_ = std::thread([this] {
    while (!stopping_.load()) {
      jobs_->Tick();
      absl::SleepFor(absl::Milliseconds(200));
    }
  });
  return absl::OkStatus();
}

void Coordinator::Shutdown(absl::Duration deadline) {
  if (stopping_.exchange(true)) return;
  if (jobs_ != nullptr) jobs_->Shutdown();  // ends long-polls so the drain is quick
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(absl::ToChronoTime(absl::Now() + deadline));
    server_->Wait();
  }
  if (ticker_.joinable()) ticker_.join();
}

Coordinator::~Coordinator() { Shutdown(absl::Seconds(1)); }

}  // namespace tunefleet::server
