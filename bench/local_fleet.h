// A fleet on loopback for tests: a coordinator process and worker processes
// started from the build's binaries, each with its own files under a TempDir.
#ifndef TUNEFLEET_TESTS_INTEGRATION_FLEET_H_
#define TUNEFLEET_TESTS_INTEGRATION_FLEET_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/subprocess.h"

namespace tunefleet::testing {

struct FleetOptions {
  std::string data_dir;         // the coordinator's data dir (SQLite)
  int64_t lease_ttl_ms = 3000;  // short, so that a killed worker's lease expires soon
  int64_t heartbeat_ms = 300;
  int batch_size = 2;
  double measure_budget = 0.02;  // seconds of timing per config
};

// Not thread-safe. Processes are killed when the Fleet goes away.
class Fleet {
 public:
  explicit Fleet(FleetOptions options) : options_(std::move(options)) {}

  // Starts the coordinator and waits until it serves; address() is then set.
  absl::Status StartCoordinator();
  // SIGTERM, then waits for a clean exit (code 0).
  absl::StatusOr<ExitInfo> StopCoordinator();
  // Starts a worker; returns its index.
  absl::StatusOr<int> StartWorker();
  Subprocess* worker(int index) { return workers_[index].get(); }
  const std::string& address() const { return address_; }
  std::string database_url() const;

 private:
  FleetOptions options_;
  std::unique_ptr<Subprocess> coordinator_;
  std::vector<std::unique_ptr<Subprocess>> workers_;
  std::string address_;
  int restarts_ = 0;
};

// Runs a program to completion, capturing stdout (stderr goes to the test log).
struct RunResult {
  ExitInfo exit;
  std::string out;
};
absl::StatusOr<RunResult> RunProgram(const std::vector<std::string>& argv,
                                     absl::Duration timeout);

std::string BinPath(const std::string& name);

}  // namespace tunefleet::testing

#endif  // TUNEFLEET_TESTS_INTEGRATION_FLEET_H_
