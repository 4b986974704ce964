#include "server/coordinator.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include "absl/strings/str_cat.h"
#include "common/config_space.h"
#include "common/coordinator_channel.h"
#include "common/status_macros.h"
#include "common/usable_cpus.h"
#include "common/version.h"
#include "server/auth_processor.h"
#include "server/admin_service.h"
#include "server/best_config_index.h"
#include "server/best_keeper.h"
#include "server/best_transfer.h"
#include "server/fleet_names.h"
#include "server/job_history.h"
#include "server/quarantine.h"
#include "server/call_pool.h"
#include "server/decode_errors.h"
#include "server/long_polls.h"
#include "server/profile_manager.h"
#include "server/metered_store.h"
#include "server/prometheus_metrics.h"
#include "server/rpc_metrics.h"
#include "server/shared_artifacts.h"
#include "server/source_blobs.h"
#include "server/store/leadership.h"
#include "server/store/store.h"
#include "server/token_book.h"
#include "server/token_service.h"
#include "server/tuning_service.h"
#include "server/worker_registry.h"
#include "server/worker_service.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {
namespace {

// Workers and clients ping their coordinators (common/coordinator_channel.h)
// so that one that stopped running loses their calls; a coordinator accepts
// those pings, calls in flight or not.
void AcceptKeepalives(grpc::ServerBuilder* builder) {
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                              kCoordinatorMinPingIntervalMs);
}

// Every kernel's newest spec and every best row, into the index.
absl::Status LoadIndex(Store* store, BestConfigIndex* index) {
  ASSIGN_OR_RETURN(std::vector<KernelRecord> kernels, store->ListKernels());
  for (const KernelRecord& kernel : kernels) {
    v1::JobSpec spec;
    if (spec.ParseFromString(kernel.spec)) index->PutKernel(spec);
  }
  ASSIGN_OR_RETURN(std::vector<BestRecord> rows, store->ListBest("", "", ""));
  for (const BestRecord& row : rows) index->PutBest(row);
  return absl::OkStatus();
}

// `listen` ("host:port") with the port `port`.
std::string WithPort(const std::string& listen, int port) {
  return absl::StrCat(listen.substr(0, listen.rfind(':')), ":", port);
}

// host:pid, as the leader row names this process.
std::string DefaultHolder() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(host[0] != '\0' ? host : "localhost", ":", getpid());
}

// The services workers and clients check the health of (ChannelTarget's
// balancing): SERVING on the leader only.
constexpr const char* kLeaderServices[] = {"tunefleet.v1.TuningService",
                                           "tunefleet.v1.WorkerService"};

void SetLeaderServices(grpc::Server* server, bool serving) {
  for (const char* service : kLeaderServices) {
    server->GetHealthCheckService()->SetServingStatus(service, serving);
  }
}

}  // namespace

int Coordinator::metrics_port() const { return metrics_ == nullptr ? 0 : metrics_->port(); }

int LeaseThreadsFor(int asked) {
  if (asked >= 0) return asked;
  return UsableCpus() > 1 ? 16 : 0;
}

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Start(
    const CoordinatorOptions& options) {
  std::unique_ptr<Coordinator> coordinator(new Coordinator());
  RETURN_IF_ERROR(coordinator->Init(options));
  return coordinator;
}

absl::Status Coordinator::Init(const CoordinatorOptions& options) {
  options_ = options;
  options_.lease_threads = LeaseThreadsFor(options.lease_threads);  // resolved once
  std::string url = options.database_url;
  if (url.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.data_dir, error);
    std::filesystem::path dir = std::filesystem::absolute(options.data_dir, error);
    url = absl::StrCat("sqlite://", dir.string(), "/tunefleet.db");
  }
  if (!options.metrics_listen.empty()) {
    ASSIGN_OR_RETURN(metrics_, PrometheusMetrics::Start(
                                   options.metrics_listen, kVersion,
                                   CoordinatorPools{UsableCpus(), options.report_threads,
                                                    options_.lease_threads}));
  }
  fence_ = std::make_shared<LeaderFence>();
  ASSIGN_OR_RETURN(store_, OpenStore(url, fence_));
  CoordinatorMetrics* const metrics =
      metrics_ != nullptr ? static_cast<CoordinatorMetrics*>(metrics_.get()) : &null_metrics_;
  store_ = std::make_unique<MeteredStore>(std::move(store_), metrics);
  ASSIGN_OR_RETURN(leadership_,
                   OpenLeadership(url, options.holder.empty() ? DefaultHolder() : options.holder,
                                  fence_, options.leader_session_timeout));
  if (leadership_->allows_standby() &&
      options.leader_session_timeout < 4 * options.standby_poll) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the leader's session timeout (", absl::FormatDuration(options.leader_session_timeout),
        ") must be at least 4 times the standby poll (",
        absl::FormatDuration(options.standby_poll), "): the lead's session is kept busy that "
        "often"));
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  // The lead's session is kept busy from a thread of its own, so that a slow
  // tick, or a long start or takeover, never lets the server's idle timeout
  // end it: only a process that stopped running loses the lead that way.
  keepalive_ = std::thread([this] {
    while (!stop_keepalive_.WaitForNotificationWithTimeout(options_.standby_poll)) {
      leadership_->KeepAlive();
    }
  });
  ASSIGN_OR_RETURN(const bool leads, leadership_->TryAcquire());
  if (leads) {
    RETURN_IF_ERROR(Lead(options.listen));
  } else if (!leadership_->allows_standby()) {
    const std::string leader = leadership_->Leader();
    return absl::FailedPreconditionError(absl::StrCat(
        "another coordinator", leader.empty() ? "" : absl::StrCat(" (", leader, ")"),
        " serves this SQLite database; a SQLite file has one coordinator (PostgreSQL keeps a "
        "standby)"));
  } else {
    RETURN_IF_ERROR(StartStandby());
  }
  ticker_ = std::thread([this] {
    while (!stopping_.load()) {
      if (leading_.load()) {
        Tick();
      } else if (Lost().ok()) {
        TryLead();
      }
      absl::SleepFor(leading_.load() ? absl::Milliseconds(200) : options_.standby_poll);
    }
  });
  return absl::OkStatus();
}

absl::Status Coordinator::StartStandby() {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   MakeServerCredentials(options_.tls));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.listen, credentials, &port_);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  AcceptKeepalives(&builder);
  standby_server_ = builder.BuildAndStart();
  if (standby_server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options_.listen,
        ": the address is in use (another coordinator?) or not this host's"));
  }
  standby_server_->GetHealthCheckService()->SetServingStatus(false);
  SetLeaderServices(standby_server_.get(), false);
  standby_leader_ = leadership_->Leader();
  if (metrics_ != nullptr) metrics_->Leading(false);
  spdlog::info("standby: {} leads the database; waiting for the lead",
               standby_leader_.empty() ? std::string("another coordinator") : standby_leader_);
  return absl::OkStatus();
}

void Coordinator::TryLead() {
  absl::StatusOr<bool> acquired = leadership_->TryAcquire();
  if (!acquired.ok()) {
    spdlog::warn("standby: cannot try for the lead: {}", acquired.status().ToString());
    return;
  }
  if (!*acquired) return;
  spdlog::info("the lead is this coordinator's now (epoch {}): taking over",
               leadership_->epoch());
  // The port passes from the standby's server to the leader's.
  standby_server_->Shutdown(absl::ToChronoTime(absl::Now()));
  standby_server_->Wait();
  standby_server_.reset();
  const absl::Status led = Lead(WithPort(options_.listen, port_));
  if (!led.ok()) GiveUp(absl::UnavailableError(absl::StrCat("taking over failed: ", led.message())));
}

absl::Status Coordinator::Lead(const std::string& listen) {
  const CoordinatorOptions& options = options_;
  auto clock = [] { return absl::Now(); };
  workers_ = std::make_unique<WorkerRegistry>(3 * options.heartbeat_interval, clock,
                                              options.forget_workers_after,
                                              options.device_models);
  // A nearest-shape answer is checked with its device model's real limits
  // where a worker of that model registered.
  index_ = std::make_unique<BestConfigIndex>(
      [workers = workers_.get()](const std::string& model) -> std::optional<DeviceLimits> {
        std::optional<v1::Device> device = workers->DeviceOf(model);
        if (!device.has_value()) return std::nullopt;
        return LimitsFromDevice(*device);
      });
  RETURN_IF_ERROR(LoadIndex(store_.get(), index_.get()));
  tokens_ = std::make_unique<TokenBook>(store_.get(), clock);
  RETURN_IF_ERROR(tokens_->Load());
  if (!options.admin_token_file.empty()) {
    RETURN_IF_ERROR(tokens_->Bootstrap(options.admin_token_file));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   MakeServerCredentials(options.tls));
  callers_ = std::make_unique<Callers>(options.tls.insecure() ? nullptr : tokens_.get());
  if (!options.tls.insecure()) {
    credentials->SetAuthMetadataProcessor(std::make_shared<AuthProcessor>(tokens_.get(), metrics_.get()));
  }
  token_service_ = std::make_unique<TokenServiceImpl>(tokens_.get(), callers_.get());
  blobs_ = std::make_unique<SourceBlobs>(store_.get());
  SharedArtifactsOptions artifact_options;
  artifact_options.dir = options.artifact_dir.empty()
                             ? (std::filesystem::path(options.data_dir) / "artifacts").string()
                             : options.artifact_dir;
  artifact_options.capacity_bytes = options.artifact_cache_bytes;
  artifact_options.builders = options.artifact_builders;
  ASSIGN_OR_RETURN(artifacts_, SharedArtifacts::Open(std::move(artifact_options), metrics_.get()));
  quarantine_ = std::make_unique<QuarantineList>(store_.get());
  RETURN_IF_ERROR(quarantine_->Load());
  if (metrics_ != nullptr) metrics_->WorkersQuarantined(static_cast<int>(quarantine_->size()));
  keeper_ = std::make_unique<BestKeeper>(store_.get(), index_.get(), quarantine_.get(),
                                         [] { return absl::ToUnixMillis(absl::Now()); });
  // The receipts' key is the database's: a lease another process of it
  // granted (before a restart, or a takeover) is adopted here.
  JobManagerOptions job_options = options.jobs;
  if (options.lease_receipts) {
    ASSIGN_OR_RETURN(const std::string receipts_key,
                     store_->Secret(kLeaseReceiptsSecret, LeaseReceipts::NewKey()));
    job_options.receipts =
        std::make_shared<LeaseReceipts>(receipts_key, LeaseReceipts::RandomIncarnation());
  }
  jobs_ = std::make_unique<JobManager>(job_options, store_.get(), workers_.get(),
                                       blobs_.get(), clock, metrics_.get(), index_.get(),
                                       quarantine_.get(), keeper_.get());
  transfer_ = std::make_unique<BestTransfer>(store_.get(), index_.get(),
                                             [] { return absl::ToUnixMillis(absl::Now()); });
  admin_service_ = std::make_unique<AdminServiceImpl>(keeper_.get(), quarantine_.get(),
                                                      metrics_.get(), transfer_.get(),
                                                      artifacts_.get(), workers_.get());
  profiles_ = std::make_unique<ProfileManager>(
      store_.get(), [jobs = jobs_.get()](const std::string& id) { return jobs->Get(id); },
      workers_.get(), clock, options.jobs.lease_ttl, quarantine_.get(), metrics_.get());
  // A profile request waits for one device of its model: it goes first.
  const std::vector<LeaseSource*> lease_sources = {profiles_.get(), jobs_.get()};
  long_polls_ = std::make_unique<LongPolls>(LongPolls::FirstOf(lease_sources),
                                            options.max_long_poll);
  jobs_->SetWorkListener([polls = long_polls_.get()] { polls->Notify(); });
  profiles_->SetWorkListener([polls = long_polls_.get()] { polls->Notify(); });
  RETURN_IF_ERROR(jobs_->Recover());
  RETURN_IF_ERROR(profiles_->Recover());
  history_ = std::make_unique<JobHistory>(store_.get(), jobs_.get());
  names_ = std::make_unique<FleetNames>(index_.get(), workers_.get());
  watches_ = std::make_unique<JobWatches>(
      jobs_.get(), JobWatches::Options{.max_per_principal = options.max_watches_per_principal,
                                       .max_total = options.max_watches});
  tuning_service_ = std::make_unique<TuningServiceImpl>(
      jobs_.get(), workers_.get(), index_.get(), history_.get(), transfer_.get(),
      profiles_.get(), names_.get(), watches_.get(), callers_.get());
  report_pool_ = std::make_unique<CallPool>(
      CallPool::Options{options.report_threads, options.report_nice, "reports"});
  if (options.lease_threads > 0) {
    lease_pool_ =
        std::make_unique<CallPool>(CallPool::Options{options.lease_threads, 0, "leases"});
  }
  worker_service_ = std::make_unique<WorkerServiceImpl>(
      jobs_.get(), workers_.get(), long_polls_.get(), blobs_.get(), report_pool_.get(),
      lease_pool_.get(),
      options.heartbeat_interval, options.jobs.lease_ttl, lease_sources, artifacts_.get(),
      callers_.get());

  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, credentials, &port_);
  // gRPC sets SO_REUSEPORT by default: a second coordinator on a taken port
  // would then start beside the first and share its clients.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  AcceptKeepalives(&builder);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.RegisterService(tuning_service_.get());
  builder.RegisterService(worker_service_.get());
  builder.RegisterService(token_service_.get());
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<DecodeErrorsFactory>());
  if (metrics_ != nullptr) {
    interceptors.push_back(std::make_unique<RpcMetricsFactory>(metrics_.get()));  // sees the code sent
  }
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(admin_service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", listen,
        ": the address is in use (another coordinator?) or not this host's"));
  }
  server_->GetHealthCheckService()->SetServingStatus(true);
  SetLeaderServices(server_.get(), true);
  leading_ = true;
  if (metrics_ != nullptr) metrics_->Leading(true);
  return absl::OkStatus();
}

absl::Status Coordinator::Lost() const {
  absl::MutexLock lock(&lost_mu_);
  return lost_;
}

void Coordinator::GiveUp(const absl::Status& why) {
  spdlog::critical("this coordinator stops serving: {}", why.ToString());
  {
    absl::MutexLock lock(&lost_mu_);
    if (lost_.ok()) lost_ = why;
  }
  leading_ = false;
  if (metrics_ != nullptr) metrics_->Leading(false);
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    SetLeaderServices(server_.get(), false);
  }
  if (long_polls_ != nullptr) long_polls_->Shutdown();
}

void Coordinator::Tick() {
  // A leader whose session ended, or that another took over from, writes
  // nothing more (its store is fenced): it stops before it misleads anyone.
  const int checks_every = std::max<int>(
      1, static_cast<int>(options_.standby_poll / absl::Milliseconds(200)));
  if (++ticks_ % checks_every == 0) {
    const int64_t epoch = leadership_->epoch();
    const absl::Status lead = leadership_->Check();
    if (absl::IsFailedPrecondition(lead)) {
      GiveUp(lead);
      return;
    }
    if (leadership_->epoch() != epoch) {
      spdlog::warn("the session that held the database's lead ended; nobody else led, so this "
                   "coordinator leads on at epoch {}",
                   leadership_->epoch());
    }
  }
  const absl::Status health = store_->CheckHealth();
  if (health.ok() != store_healthy_) {
    store_healthy_ = health.ok();
    if (metrics_ != nullptr) metrics_->StoreHealthy(store_healthy_);
    if (store_healthy_) {
      spdlog::info("store healthy again: serving");
    } else {
      spdlog::error("store unhealthy: NOT_SERVING ({})", std::string(health.message()));
    }
    if (!stopping_.load()) server_->GetHealthCheckService()->SetServingStatus("", store_healthy_);
  }
  jobs_->Tick();
  profiles_->Tick();
}

void Coordinator::Shutdown(absl::Duration deadline) {
  if (stopping_.exchange(true)) return;
  // A takeover in progress finishes first: then what serves is settled.
  if (ticker_.joinable()) ticker_.join();
  stop_keepalive_.Notify();
  if (keepalive_.joinable()) keepalive_.join();
  if (long_polls_ != nullptr) long_polls_->Shutdown();  // so the drain is quick
  if (watches_ != nullptr) watches_->Shutdown();
  if (standby_server_ != nullptr) {
    standby_server_->Shutdown(absl::ToChronoTime(absl::Now()));
    standby_server_->Wait();
  }
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(absl::ToChronoTime(absl::Now() + deadline));
    server_->Wait();
  }
}

Coordinator::~Coordinator() { Shutdown(absl::Seconds(1)); }

}  // namespace tunefleet::server
