// FakeWorkers: many simulated workers that speak the worker API to a real
// coordinator (register, long-poll LeaseWork, report every trial at once as
// OK with a made-up timing, heartbeat) and count what the coordinator does
// for them. They never compile or run anything.
#ifndef TUNEFLEET_BENCH_FAKE_WORKERS_H_
#define TUNEFLEET_BENCH_FAKE_WORKERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/load_stats.h"

namespace tunefleet::bench {

struct FakeWorkerOptions {
  std::string address;      // the coordinator, host:port on loopback
  int workers = 1000;       // default 1,000
  int loops = 1;            // completion-queue threads they share; default 1
  int connections = 0;      // gRPC connections; 0 (default) = one per worker, as real ones
  std::string device_model = "load-bench CPU x1";
  std::string toolkit = "load-bench g++ 12.2";
  int64_t lease_wait_ms = 5000;  // LeaseWork long-poll, as the real worker's default
  int max_trials = 0;            // per lease; 0 = the coordinator's batch size
  // Added to the nice value of the loops' threads: beside query callers on
  // the same core, the workers then queue behind them, so that the callers
  // measure the coordinator's latency rather than the load generator's.
  int nice = 0;
};

// What the workers saw since the last ResetCounters.
struct WorkerCounters {
  int64_t leases = 0;           // LeaseWork calls that returned a lease
  int64_t empty_polls = 0;      // LeaseWork calls that returned none
  int64_t results = 0;          // trials reported and acknowledged (not cancelled)
  int64_t cancelled_reports = 0;
  int64_t reregisters = 0;      // heartbeats answered "reregister"
  int64_t errors = 0;           // calls that failed (any RPC)
  std::string first_error;
  LatencySamples lease;         // only LeaseWork calls that returned a lease
  LatencySamples report;
  LatencySamples heartbeat;

  void Merge(const WorkerCounters& other);
};

// Thread-safety: safe for concurrent use; the workers run on their own
// threads (options.loops of them).
class FakeWorkers {
 public:
  // Starts the workers and returns once every one is registered.
  // DeadlineExceeded when that takes over 60 s.
  static absl::StatusOr<std::unique_ptr<FakeWorkers>> Start(const FakeWorkerOptions& options);
  // Stops the workers (Stop).
  ~FakeWorkers();

  // Forgets what was counted so far.
  void ResetCounters();
  WorkerCounters Counters();
  // Cancels the long-polls and waits until every call has ended. The
  // workers' leases are not given back: they expire on the coordinator.
  void Stop();

 private:
  class Worker;
  struct Loop;

  explicit FakeWorkers(const FakeWorkerOptions& options);

  const FakeWorkerOptions options_;
  std::vector<std::unique_ptr<Loop>> loops_;
};

}  // namespace tunefleet::bench

#endif  // TUNEFLEET_BENCH_FAKE_WORKERS_H_
