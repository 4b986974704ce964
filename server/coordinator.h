// The Coordinator: the store, best-config index, worker registry, source
// blobs, job manager, long-polls and the gRPC server (TuningService,
// WorkerService, health, reflection) of one coordinator process, built in
// dependency order. A ticker does the periodic upkeep and turns health ("")
// NOT_SERVING while the store fails its health check.
//
// One coordinator leads a database at a time (server/store/leadership.h).
// One started on a PostgreSQL database another leads is a standby: it
// listens on its address with health alone, every service NOT_SERVING (so
// that clients and workers balancing over several addresses by health go to
// the leader), tries for the lead every `standby_poll`, and once it leads
// builds the rest and serves on the same port. A leader that loses the lead
// stops serving and says so (Lost): its process must end.
#ifndef TUNEFLEET_SERVER_COORDINATOR_H_
#define TUNEFLEET_SERVER_COORDINATOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/grpc_security.h"
#include "server/job_manager.h"
#include "server/store/leadership.h"
#include "server/metrics.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace tunefleet::server {

class Store;
class LeaderFence;
class Leadership;
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
class Callers;
class JobWatches;
class TokenBook;
class TokenServiceImpl;
class AdminServiceImpl;
class QuarantineList;
class BestKeeper;
class WorkerServiceImpl;

// The lease threads for CoordinatorOptions::lease_threads `asked`: as asked
// when it is 0 or more; else 16 with two or more usable CPUs (so that gRPC's
// threads, which also answer heartbeats and reads, never wait for the job
// lock) and none on one CPU, where no lease could run beside the lock's
// holder and the hand-over to a pool thread only costs a context switch.
int LeaseThreadsFor(int asked);

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
  // The only device models workers may register (--device-model); empty:
  // any. Stops a certificate from inventing models for jobs to bind to.
  std::vector<std::string> device_models;
  // host:port of the Prometheus /metrics endpoint; empty turns it off.
  // Default empty.
  std::string metrics_listen;
  // Threads that record reported results (they wait on the store; reports
  // that arrive together share its transactions). Default 64.
  int report_threads = 64;
  // How far below gRPC's threads (which answer the applications' reads)
  // those threads run: added to their nice value, 0 to 19. Default 10: on
  // a saturated core a GetBestConfig waits for no report.
  int report_nice = 10;
  // Threads that try a LeaseWork call at once (they wait for the
  // JobManager's lock; a call that finds no work then waits as a callback,
  // holding none), at the process's priority. 0: gRPC's threads try it
  // (and wait for the lock). Default -1: LeaseThreadsFor.
  int lease_threads = -1;
  // Seal search leases with receipts (server/lease_receipts.h), so that a
  // restart or a takeover keeps what workers measured across it; false:
  // their configs are measured again. Default true.
  bool lease_receipts = true;
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
  // WatchJob streams open at once, per principal and in all (each holds its
  // state and an HTTP/2 stream, no thread; JobWatches). Defaults 64 and 1024.
  int max_watches_per_principal = 64;
  int max_watches = 1024;
  // How often a standby tries for its database's lead, and a leader checks
  // that it still holds it. Default 500 ms.
  absl::Duration standby_poll = absl::Milliseconds(500);
  // PostgreSQL (14 and later) ends the leader's lock session once it has
  // sent nothing this long: a leader paused or cut off longer loses the lead
  // to a standby (and its fenced store writes nothing after). A thread of
  // its own keeps the session busy every standby_poll, so at least 4 x
  // standby_poll. Default 15 s.
  absl::Duration leader_session_timeout = kDefaultLeaderSessionTimeout;
  // The name the leader row gives this process; empty: host:pid.
  std::string holder;
  JobManagerOptions jobs;
};

// Thread-safety: Start, port and Shutdown may be called from any thread.
class Coordinator {
 public:
  // Opens the store (applying migrations); when this process leads the
  // database, reloads unfinished jobs and starts serving, else starts as a
  // standby. Unavailable when the port cannot be bound; FailedPrecondition
  // when another coordinator serves the same SQLite file.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Start(
      const CoordinatorOptions& options);
  ~Coordinator();

  // The bound port (useful with port 0); a standby's is the port it will
  // serve on.
  int port() const { return port_; }
  // Whether this process leads its database now (else it is a standby).
  bool leading() const { return leading_.load(); }
  // Who leads the database, for a standby's messages ("" when unknown).
  std::string leader() const { return standby_leader_; }
  // OK while this coordinator serves or waits as a standby; once it lost
  // its database's lead, or failed to take it up, why: it serves nothing
  // more, and its process should end.
  absl::Status Lost() const;
  // The bound metrics port, 0 when metrics are off.
  int metrics_port() const;
  // Marks health NOT_SERVING, lets in-flight calls finish until `deadline`,
  // then stops. Idempotent.
  void Shutdown(absl::Duration deadline);

 private:
  Coordinator() = default;
  absl::Status Init(const CoordinatorOptions& options);
  // Builds everything that serves, on the database this process leads, and
  // starts serving on `listen`.
  absl::Status Lead(const std::string& listen);
  // Listens on options_.listen with health alone (NOT_SERVING).
  absl::Status StartStandby();
  // The standby's try for the lead; leads once it has it.
  void TryLead();
  // Periodic upkeep, health from the store's health check, and the lead.
  void Tick();
  // Stops serving for good: the lead is gone.
  void GiveUp(const absl::Status& why);

  CoordinatorOptions options_;
  NullMetrics null_metrics_;  // when metrics are off
  std::unique_ptr<PrometheusMetrics> metrics_;
  std::shared_ptr<LeaderFence> fence_;
  std::unique_ptr<Leadership> leadership_;  // the ticker's, once started
  std::unique_ptr<grpc::Server> standby_server_;
  std::string standby_leader_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<BestConfigIndex> index_;
  std::unique_ptr<WorkerRegistry> workers_;
  std::unique_ptr<SourceBlobs> blobs_;
  std::unique_ptr<SharedArtifacts> artifacts_;
  std::unique_ptr<TokenBook> tokens_;
  std::unique_ptr<Callers> callers_;
  std::unique_ptr<TokenServiceImpl> token_service_;
  std::unique_ptr<QuarantineList> quarantine_;
  std::unique_ptr<BestKeeper> keeper_;
  std::unique_ptr<BestTransfer> transfer_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<ProfileManager> profiles_;
  std::unique_ptr<LongPolls> long_polls_;
  std::unique_ptr<JobHistory> history_;
  std::unique_ptr<FleetNames> names_;
  std::unique_ptr<JobWatches> watches_;
  std::unique_ptr<TuningServiceImpl> tuning_service_;
  std::unique_ptr<AdminServiceImpl> admin_service_;
  std::unique_ptr<CallPool> report_pool_;  // outlives the server
  std::unique_ptr<CallPool> lease_pool_;   // outlives the server
  std::unique_ptr<WorkerServiceImpl> worker_service_;
  std::unique_ptr<grpc::Server> server_;
  std::thread ticker_;
  std::thread keepalive_;  // Leadership::KeepAlive every standby_poll
  absl::Notification stop_keepalive_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> leading_{false};
  bool store_healthy_ = true;  // the ticker's
  int ticks_ = 0;              // the ticker's
  int port_ = 0;
  mutable absl::Mutex lost_mu_;
  absl::Status lost_ ABSL_GUARDED_BY(lost_mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_COORDINATOR_H_
