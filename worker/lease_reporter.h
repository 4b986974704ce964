// Streams the results of one lease back to the coordinator: results are
// reported in small batches about every `interval` (so a killed worker loses
// little), and an empty report renews the lease when nothing else did.
//
// A search lease carries the coordinator's receipt (v1::Lease.receipt),
// sent with every report. When the coordinator restarted, or a standby took
// over, results it could not take are kept: reports go on failing
// (UNAVAILABLE while it is away, NOT_FOUND until the worker registered again
// under a new id), and once the worker is registered, the report under its
// new id is adopted into a lease of the new process, whose id the reporter
// uses from then on.
#ifndef TUNEFLEET_WORKER_LEASE_REPORTER_H_
#define TUNEFLEET_WORKER_LEASE_REPORTER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tunefleet/v1/worker_service.pb.h"
#include "worker/coordinator.h"

namespace tunefleet::worker {

struct LeaseReporterOptions {
  // How often pending results are sent. Default 1 s.
  absl::Duration interval = absl::Seconds(1);
  // An empty report renews the lease when nothing was reported for this
  // long. Default 10 s (the daemon uses a third of the lease TTL).
  absl::Duration renew_every = absl::Seconds(10);
  // Attempts of the final report before pending results are given up (the
  // lease then expires and its trials are re-queued). Default 5.
  int final_attempts = 5;
  // With a receipt, the final report is tried this long at least: a
  // coordinator that restarts, or a standby's takeover, takes seconds, and
  // the results wait for it rather than be measured again. Default 60 s.
  absl::Duration receipt_wait = absl::Seconds(60);
  // While this says false (the worker shuts down), the final report does
  // not wait the receipt_wait out. Empty: always true.
  std::function<bool()> may_wait;
};

// Thread-safety: thread-safe. Owns a background thread from construction
// until Finish.
class LeaseReporter {
 public:
  // `worker_id` says the worker's id at each report (it changes when the
  // worker registers again). REQUIRES: `coordinator` outlives the reporter.
  LeaseReporter(Coordinator* coordinator, std::function<std::string()> worker_id,
                const v1::Lease& lease, LeaseReporterOptions options);
  LeaseReporter(Coordinator* coordinator, std::string worker_id, const v1::Lease& lease,
                LeaseReporterOptions options);
  // Finish(/*release=*/true) unless Finish was called.
  ~LeaseReporter();
  LeaseReporter(const LeaseReporter&) = delete;
  LeaseReporter& operator=(const LeaseReporter&) = delete;

  // Queues one trial's result for the next report.
  void Add(int64_t index, const v1::TrialResult& result);
  // True once the coordinator said the lease is cancelled (the job ended or
  // the lease expired) or no longer knows it: stop working on it.
  bool cancelled() const { return cancelled_.load(); }
  // The job target's best median as the coordinator last said it
  // (Lease.best_seconds, then each report's answer); 0 when none is known.
  double best_seconds() const { return best_seconds_.load(); }
  // Stops the background thread and sends what is pending, with `release`
  // set (hand back the trials not reported). Unavailable when the
  // coordinator could not be reached after final_attempts.
  absl::Status Finish(bool release);
  // The lease's id now: the granted one, or the one it was adopted into.
  std::string lease_id() const;

 private:
  void Loop();
  // Sends the pending results (or an empty renewal); keeps them on a
  // retryable failure.
  absl::Status Send(bool release);

  Coordinator* const coordinator_;
  const std::function<std::string()> worker_id_;
  const std::string receipt_;
  const LeaseReporterOptions options_;
  std::atomic<bool> cancelled_{false};
  std::atomic<double> best_seconds_;

  absl::Mutex send_mu_;  // one report in flight at a time
  mutable absl::Mutex mu_;
  std::string lease_id_ ABSL_GUARDED_BY(mu_);
  int64_t epoch_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ReportedTrial> pending_ ABSL_GUARDED_BY(mu_);
  absl::Time last_report_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ = false;  // owned by the thread that calls Finish
  std::thread thread_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_LEASE_REPORTER_H_
