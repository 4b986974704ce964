// An IdleMeter measures how long a set of `units` that do the same work (the
// compile pool's threads, or one device's benchmark child) stood idle while
// the worker held work for them: the integral over time of
// (units - busy units) while at least one lease is held. It answers "did the
// look-ahead keep everything busy?"; tunefleet-worker --stats-dir writes it
// for bench/tune_bench, with where the trials' time went (TrialPhaseTotals).
#ifndef TUNEFLEET_WORKER_IDLE_METER_H_
#define TUNEFLEET_WORKER_IDLE_METER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tunefleet/v1/bench_child.pb.h"

namespace tunefleet::worker {

// Thread-safety: thread-safe.
class IdleMeter {
 public:
  using Clock = std::function<absl::Time()>;

  // REQUIRES: units >= 1.
  explicit IdleMeter(int units, Clock clock = [] { return absl::Now(); });

  // A lease was taken (+1) or is done (-1): work is held while the count is
  // above 0.
  void Hold(int delta);
  // A unit starts (+1) or stops (-1) working.
  void Busy(int delta);

  // Unit-seconds idle while work was held, so far.
  double idle_seconds();
  // Seconds during which work was held (wall time, not per unit).
  double held_seconds();
  // Unit-seconds busy, whether work was held or not.
  double busy_seconds();
  int units() const { return units_; }

 private:
  // Adds the time since the last change to the sums.
  void Advance() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int units_;
  const Clock clock_;
  absl::Mutex mu_;
  absl::Time last_ ABSL_GUARDED_BY(mu_);
  int held_ ABSL_GUARDED_BY(mu_) = 0;
  int busy_ ABSL_GUARDED_BY(mu_) = 0;
  double idle_ ABSL_GUARDED_BY(mu_) = 0;
  double held_time_ ABSL_GUARDED_BY(mu_) = 0;
  double busy_time_ ABSL_GUARDED_BY(mu_) = 0;
};

// Marks one unit of `meter` busy for its lifetime (no-op for null).
class BusyScope {
 public:
  explicit BusyScope(IdleMeter* meter) : meter_(meter) {
    if (meter_ != nullptr) meter_->Busy(+1);
  }
  ~BusyScope() {
    if (meter_ != nullptr) meter_->Busy(-1);
  }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  IdleMeter* const meter_;
};

// Where the measured trials' time went: the benchmark children's own
// TrialPhases summed over every trial that reported them, and the rest of
// the daemon's wait for those trials (`outside`: the request and answer
// through the child's pipe, and whatever the child did not count).
// Thread-safety: thread-safe.
class TrialPhaseTotals {
 public:
  // One trial whose child reported `phases` (ignored when empty) and that
  // the daemon waited `elapsed` for.
  void Add(const v1::TrialPhases& phases, absl::Duration elapsed);
  struct Sums {
    int64_t trials = 0;
    v1::TrialPhases phases;
    double outside_seconds = 0;
  };
  Sums sums() const;

 private:
  mutable absl::Mutex mu_;
  Sums sums_ ABSL_GUARDED_BY(mu_);
};

// Writes the meters to `path` (through a temporary file and a rename, so a
// reader never sees half a file) as "name value" lines: compile_pool_threads,
// compile_pool_idle_seconds, compile_pool_busy_seconds, held_seconds (of the
// pool), devices, device_idle_seconds and device_busy_seconds (summed over
// `devices`); with `phases`, also trials_phased, trial_load_seconds,
// trial_check_seconds, trial_warmup_seconds, trial_sampling_seconds and
// trial_outside_seconds (TrialPhaseTotals). Null meters count as zero.
absl::Status WriteIdleStats(const std::string& path, IdleMeter* pool,
                            const std::vector<IdleMeter*>& devices,
                            const TrialPhaseTotals* phases = nullptr);

// Keeps <dir>/worker-<pid>.stats up to date (WriteIdleStats every 200 ms,
// once more on Stop) for tools that read a running worker's idle time
// (bench/tune_bench's --stats-dir); does nothing for an empty `dir`. A
// failed write is logged and tried again at the next tick.
// REQUIRES: the meters outlive the writer.
class IdleStatsWriter {
 public:
  IdleStatsWriter(const std::string& dir, IdleMeter* pool, std::vector<IdleMeter*> devices,
                  const TrialPhaseTotals* phases = nullptr);
  // Stop().
  ~IdleStatsWriter();
  // Writes a last time and joins the thread. Idempotent.
  void Stop();

 private:
  void Write();

  const std::string path_;
  IdleMeter* const pool_;
  const std::vector<IdleMeter*> devices_;
  const TrialPhaseTotals* const phases_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_IDLE_METER_H_
