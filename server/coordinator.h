// The Coordinator: the store, best-config index, worker registry, source
// blobs, job manager, long-polls and the gRPC server (TuningService,
// WorkerService, health, reflection) of one coordinator process, built in
// dependency order. A ticker does the periodic upkeep and turns health
// NOT_SERVING while the store fails its health check.
#ifndef TUNEFLEET_SERVER_COORDINATOR_H_
#define TUNEFLEET_SERVER_COORDINATOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc_security.h"
#include "server/job_manager.h"
#include "server/metrics.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace tunefleet::server {

class Store;
class BestConfigIndex;
class CallPool;
class FleetNames;
class LongPolls;
class ProfileManager;
class SourceBlobs;
class SharedArtifacts;
class WorkerRegistry;
class PrometheusMetrics;
class TuningServiceImpl;
class JobHistory;
class BestTransfer;
class StreamSlots;
class TokenBook;
class TokenServiceImpl;
class AdminServiceImpl;
class QuarantineList;
class BestKeeper;
class WorkerServiceImpl;

struct CoordinatorOptions {
  // host:port to listen on; port 0 picks a free port. Default 127.0.0.1:7070.
  std::string listen = "127.0.0.1:7070";
  // Store URL (see OpenStore). Empty: sqlite:///<data_dir>/tunefleet.db.
  std::string database_url;
  // Where the embedded SQLite database lives. Default "./tunefleet-data".
  std::string data_dir = "tunefleet-data";
  // Workers heartbeat this often; one silent for 3 intervals is not alive.
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // A worker silent this long leaves ListWorkers (it registers again when it
  // comes back). Default: 10 heartbeat timeouts (30 heartbeat intervals).
  absl::Duration forget_workers_after = absl::InfiniteDuration();
  // host:port of the Prometheus /metrics endpoint; empty turns it off.
  // Default empty.
  std::string metrics_listen;
  // Threads that record reported results (they wait on the store; reports
  // that arrive together share its transactions). Default 64.
  int report_threads = 64;
  // Longest LeaseWork long-poll. Default 30 s.
  absl::Duration max_long_poll = absl::Seconds(30);
  // Largest request or response message. Default 32 MiB.
  int max_message_bytes = 32 << 20;
  // TLS and the CA of worker certificates. Empty (the default): plaintext
  // and no authentication at all: every caller acts as an admin.
  ServerTls tls;
  // A file holding an admin token the coordinator trusts; created with a new
  // token (mode 0600) when missing. Empty: none. Default empty.
  std::string admin_token_file;
  // Where compiled artifacts that workers share are kept (SharedArtifacts);
  // empty: <data_dir>/artifacts. Default empty.
  std::string artifact_dir;
  // Most bytes of shared artifacts kept (least recently used go first); 0
  // turns sharing off. Default 4 GiB.
  int64_t artifact_cache_bytes = int64_t{4} << 30;
  // Principals whose shared artifacts serve every worker (compile-only
  // builders). Default none.
  std::vector<std::string> artifact_builders;
  // WatchJob streams open at once, per principal and in all (each holds a
  // server thread; StreamSlots). Defaults 64 and 1024.
  int max_watches_per_principal = 64;
  int max_watches = 1024;
  JobManagerOptions jobs;
};

// Thread-safety: Start, port and Shutdown may be called from any thread.
class Coordinator {
 public:
  // Opens the store (applying migrations), reloads unfinished jobs and
  // starts serving. Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Start(
      const CoordinatorOptions& options);
  ~Coordinator();

  // The bound port (useful with port 0).
  int port() const { return port_; }
  // The bound metrics port, 0 when metrics are off.
  int metrics_port() const;
  // Marks health NOT_SERVING, lets in-flight calls finish until `deadline`,
  // then stops. Idempotent.
  void Shutdown(absl::Duration deadline);

 private:
  Coordinator() = default;
  absl::Status Init(const CoordinatorOptions& options);
  // Periodic upkeep, and health from the store's health check.
  void Tick();

  NullMetrics null_metrics_;  // when metrics are off
  std::unique_ptr<PrometheusMetrics> metrics_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<BestConfigIndex> index_;
  std::unique_ptr<WorkerRegistry> workers_;
  std::unique_ptr<SourceBlobs> blobs_;
  std::unique_ptr<SharedArtifacts> artifacts_;
  std::unique_ptr<TokenBook> tokens_;
  std::unique_ptr<TokenServiceImpl> token_service_;
  std::unique_ptr<QuarantineList> quarantine_;
  std::unique_ptr<BestKeeper> keeper_;
  std::unique_ptr<BestTransfer> transfer_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<ProfileManager> profiles_;
  std::unique_ptr<LongPolls> long_polls_;
  std::unique_ptr<JobHistory> history_;
  std::unique_ptr<FleetNames> names_;
  std::unique_ptr<StreamSlots> watches_;
  std::unique_ptr<TuningServiceImpl> tuning_service_;
  std::unique_ptr<AdminServiceImpl> admin_service_;
  std::unique_ptr<CallPool> report_pool_;  // outlives the server
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<grpc::Server> server_;
  std::thread ticker_;
  std::atomic<bool> stopping_{false};
  bool store_healthy_ = true;  // the ticker's
  int port_ = 0;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_COORDINATOR_H_
