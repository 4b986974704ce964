// A fleet on loopback: a coordinator process and worker processes started
// from the build's binaries, with their files under one directory. Used by
// the integration tests and the benchmarks.
#ifndef TUNEFLEET_BENCH_LOCAL_FLEET_H_
#define TUNEFLEET_BENCH_LOCAL_FLEET_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/subprocess.h"

namespace tunefleet::bench {

struct FleetOptions {
  std::string bin_dir;          // where tunefleet-coordinator and tunefleet-worker are
  std::string data_dir;         // the coordinator's data dir (SQLite)
  std::string database;         // its TUNEFLEET_DATABASE; empty: SQLite under data_dir
  int64_t lease_ttl_ms = 3000;  // short, so that a killed worker's lease expires soon
  int64_t heartbeat_ms = 300;
  int batch_size = 2;
  double measure_budget = 0.02;  // seconds of timing per config
  int finalists = 5;             // the coordinator's --finalists
  std::string backend = "cpu";   // the workers' --backend
  int compile_threads = 1;       // per worker; 0 = the host's cores
  int coordinator_cpu = -1;      // >= 0: the coordinator runs on this CPU only (taskset)
  std::vector<std::string> coordinator_flags;  // appended to the coordinator's command line
  // Empty: everything plaintext (--insecure). Else the path of
  // scripts/dev-ca.sh: the fleet then runs with TLS, a development CA under
  // data_dir/ca, a certificate per worker and an admin token.
  std::string dev_ca_script;
  std::vector<std::string> worker_flags;       // appended to each worker's command line
};

// Where one worker runs, as one host of a fleet of single-GPU hosts would.
struct WorkerPlacement {
  std::string cpus;  // taskset's CPU list ("16-31"); empty: the caller's CPUs
  std::string gpus;  // its CUDA_VISIBLE_DEVICES ("1"); empty: the caller's GPUs
};

// Not thread-safe. Processes are killed when the Fleet goes away.
class Fleet {
 public:
  explicit Fleet(FleetOptions options) : options_(std::move(options)) {}

  // Starts the coordinator and waits until it serves; address() is then set.
  absl::Status StartCoordinator();
  // SIGTERM, then waits for a clean exit (code 0).
  absl::StatusOr<ExitInfo> StopCoordinator();
  // Ends the coordinator with `signal` (SIGKILL: a crash), waits `down`,
  // and starts it again on the same address and data, so that its workers
  // find it again.
  absl::Status RestartCoordinator(int signal, absl::Duration down);
  // Starts a worker (named test-worker-<index>: its certificate's identity,
  // or the host that is its principal without TLS); returns its index.
  absl::StatusOr<int> StartWorker();
  // The same, named `name` (workers of one name are one principal), with
  // `extra_flags` after the fleet's worker flags, `compile_threads`
  // (-1: the fleet's) compile threads, and pinned as `placement` says.
  absl::StatusOr<int> StartWorker(const std::string& name,
                                  const std::vector<std::string>& extra_flags = {},
                                  int compile_threads = -1,
                                  const WorkerPlacement& placement = {});
  Subprocess* worker(int index) { return workers_[index].get(); }
  // Workers started so far (stopped ones included).
  int worker_count() const { return static_cast<int>(workers_.size()); }
  // host:port of worker `index`'s /metrics, once it serves it (waits up to
  // 30 s: the worker starts its exporter after finding its devices).
  absl::StatusOr<std::string> WorkerMetricsAddress(int index) const;
  // Where the binaries are: <bin_dir>/<name>.
  std::string BinPath(const std::string& name) const;
  const std::string& address() const { return address_; }
  // Workers started from now on reach the coordinators at `target`
  // ("ip:port,ip:port": a leader and its standbys on one database).
  void set_worker_target(std::string target) { worker_target_ = std::move(target); }
  // host:port of the coordinator's /metrics (empty when its flags turn it off).
  const std::string& metrics_address() const { return metrics_address_; }
  // REQUIRES: StartCoordinator succeeded.
  pid_t coordinator_pid() const { return coordinator_->pid(); }
  // The store the coordinator uses: `database`, else its SQLite file.
  std::string database_url() const;

  bool secure() const { return !options_.dev_ca_script.empty(); }
  // With secure(): the CA, and the file of the admin token the coordinator
  // made at its first start.
  std::string ca_file() const { return options_.data_dir + "/ca/ca.crt"; }
  std::string admin_token_file() const { return options_.data_dir + "/admin.token"; }
  // tunectl's flags to reach the coordinator as admin (or --insecure).
  std::vector<std::string> TunectlFlags() const;
  // Makes a certificate for worker `name` (secure() only); returns the
  // tunefleet-worker flags that use it.
  absl::StatusOr<std::vector<std::string>> WorkerCertificateFlags(const std::string& name) const;

 private:
  std::string WorkerMetricsFile(int index) const;
  // The coordinator's --insecure, or its TLS flags (making the CA's files).
  absl::Status SecurityFlags(std::vector<std::string>* argv);

  FleetOptions options_;
  std::unique_ptr<Subprocess> coordinator_;
  std::vector<std::unique_ptr<Subprocess>> workers_;
  std::string address_;
  std::string worker_target_;  // empty: address_
  std::string metrics_address_;
  int restarts_ = 0;
  std::string listen_ = "127.0.0.1:0";
};

// Runs a program to completion, capturing stdout (stderr goes to the test log).
struct RunResult {
  ExitInfo exit;
  std::string out;
};
absl::StatusOr<RunResult> RunProgram(const std::vector<std::string>& argv,
                                     absl::Duration timeout);


}  // namespace tunefleet::bench

#endif  // TUNEFLEET_BENCH_LOCAL_FLEET_H_
