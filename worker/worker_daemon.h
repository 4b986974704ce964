// The worker daemon: registers this host's devices with the coordinator,
// pulls leases for each device, runs their trials through the device's
// TrialExecutor (a `finalists` lease through RunFinalists: interleaved
// rounds, ExecutorOptions::finalist_rounds; a `profile` lease through the
// device's Profiler, one ncu run per config) and reports the results,
// heartbeating in the background, until Stop. Each device holds the next
// lease ahead of the one it runs (WorkerOptions::lookahead_trials).
#ifndef TUNEFLEET_WORKER_WORKER_DAEMON_H_
#define TUNEFLEET_WORKER_WORKER_DAEMON_H_

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/version.h"
#include "worker/coordinator.h"
#include "worker/lease_reporter.h"
#include "worker/metrics.h"
#include "worker/ncu_profiler.h"
#include "worker/source_cache.h"
#include "worker/trial_executor.h"

namespace tunefleet::worker {

// The look-ahead a worker holds per device unless told otherwise: one trial
// per compile thread the device shares the pool with, so that the compiles
// of a cold lease held ahead keep every thread busy while the device
// measures the current lease; at least 4, so that a small host still hides
// a lease round trip.
inline int DefaultLookaheadTrials(int compile_threads, int devices) {
  return std::max(4, compile_threads / std::max(1, devices));
}

struct WorkerOptions {
  // Reported as RegisterWorkerRequest.host. REQUIRES: non-empty.
  std::string host;
  // Compiler name and version (Compiler::toolkit()). REQUIRES: non-empty.
  std::string toolkit;
  // The worker's tunefleet version. Default: the project version.
  std::string version = kVersion;
  // Trials asked per lease (0 = the coordinator's batch size). Default 0.
  int max_trials = 0;
  // Look-ahead: while a device runs a lease, its lease loop already asks for
  // the next one, of at most this many trials, and starts its compiles, so
  // that the compile pool never idles while the device measures and the
  // device never waits for a lease. At most one lease is held ahead per
  // device. 0 turns it off. Default 4; tunefleet-worker sets
  // DefaultLookaheadTrials.
  int lookahead_trials = 4;
  // Counts the compile pool's idle time while leases are held (each lease
  // held counts; the devices' own meters are their executors'). Not owned;
  // must outlive the daemon. Default: null.
  IdleMeter* pool_meter = nullptr;
  // How long one LeaseWork waits for work. Default 5 s.
  absl::Duration lease_wait = absl::Seconds(5);
  // Retry backoff when a call fails (the coordinator unreachable, or
  // refusing): doubles from min to max, with jitter. Defaults 0.5 s and 2 s,
  // so a restarted coordinator is found within a few seconds; a fleet of N
  // workers then retries a refusing coordinator about N/2 times a second.
  absl::Duration min_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(2);
  // Used when the coordinator leaves them unset. Defaults 5 s and 30 s.
  absl::Duration default_heartbeat_interval = absl::Seconds(5);
  absl::Duration default_lease_ttl = absl::Seconds(30);
  // How often results are streamed back. Default 1 s.
  absl::Duration report_interval = absl::Seconds(1);
  // After Stop, how long the trials in progress may take to finish; then
  // the benchmark children are killed (TrialExecutor::Interrupt) and the
  // interrupted trials handed back. Default 10 s.
  absl::Duration drain_time = absl::Seconds(10);
  // Hears, at registration and at each heartbeat, the artifact keys the
  // coordinator shares no more for this worker's principal
  // (ArtifactSharing::SetUnshared). May be empty.
  std::function<void(std::vector<std::string>)> on_unshared_artifacts;
};

// Thread-safety: Run blocks its caller; Stop may be called from any thread
// (a signal thread). Each device's lease loop owns that device's executor.
class WorkerDaemon {
 public:
  // One executor per device (its benchmark child included), and a
  // profiler per device id for profile leases (a device without one answers
  // each config with "profiling is not set up on this worker"). REQUIRES:
  // `coordinator`, `sources` and `metrics` (when not null: counts nothing)
  // outlive the daemon; executors non-empty.
  WorkerDaemon(WorkerOptions options, Coordinator* coordinator, SourceCache* sources,
               std::vector<std::unique_ptr<TrialExecutor>> executors,
               WorkerMetrics* metrics = nullptr,
               absl::flat_hash_map<std::string, std::unique_ptr<Profiler>> profilers = {});
  ~WorkerDaemon();

  // Registers (retrying until it succeeds or Stop), then serves leases on
  // every device until Stop. On Stop: no new lease is taken; the trial in
  // progress finishes (within options.drain_time, else its child is killed
  // and it is handed back unreported), its results are reported and the rest
  // of the lease is handed back (release). Returns after every thread and
  // child is gone.
  void Run();
  // Asks Run to wind down. Idempotent.
  void Stop();

  // The id the coordinator gave this worker; empty before registration.
  std::string worker_id() const;
  // Leases fully served or handed back so far (for tests and logs).
  int leases_done() const;

 private:
  // Registers unless `stale_id` is no longer the current id (someone else
  // re-registered already). False when stopped first.
  bool Register(const std::string& stale_id);
  void HeartbeatLoop();
  // A lease taken: its reporter (which renews it from now on) and, for a
  // search lease whose sources resolved, its trials planned.
  struct Held;
  void LeaseLoop(TrialExecutor* executor);
  // One LeaseWork for `executor`'s device; nullopt when none came (an error
  // is logged and, unless `quiet`, registered again or backed off from).
  std::optional<v1::Lease> TakeLease(TrialExecutor* executor, int max_trials, bool quiet,
                                     absl::Duration* backoff);
  // Starts serving `lease`: reporter, sources, compiles. Thread-safe.
  std::unique_ptr<Held> Accept(TrialExecutor* executor, const v1::Lease& lease);
  // Runs a held lease to its end and reports it.
  void Serve(TrialExecutor* executor, Held* held);
  // Profiles each config of a profile lease and adds it to `reporter`;
  // returns how many were reported.
  int ServeProfiles(const TrialExecutor& executor, const JobContext& job, const v1::Lease& lease,
                    LeaseReporter* reporter);
  // Once stopping, waits up to drain_time for the lease loops to end, then
  // interrupts every executor.
  void DrainWatchdog();
  // Sleeps `backoff` (with jitter) unless stopped first; doubles it.
  void Backoff(absl::Duration* backoff);
  bool stopping() const;

  const WorkerOptions options_;
  Coordinator* const coordinator_;
  SourceCache* const sources_;
  std::vector<std::unique_ptr<TrialExecutor>> executors_;
  const absl::flat_hash_map<std::string, std::unique_ptr<Profiler>> profilers_;
  NullWorkerMetrics null_metrics_;
  WorkerMetrics* const metrics_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string worker_id_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_);
  absl::Duration lease_ttl_ ABSL_GUARDED_BY(mu_);
  int leases_done_ ABSL_GUARDED_BY(mu_) = 0;
  int loops_running_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex register_mu_;  // one registration at a time
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_WORKER_DAEMON_H_
