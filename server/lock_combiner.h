// LockCombiner: short critical sections of many threads, run in batches under
// one mutex (flat combining: Hendler, Incze, Shavit and Tzafrir, SPAA 2010).
//
// A caller queues its section. The first caller to find no batch running
// becomes the combiner: it takes the mutex once, runs every section queued
// so far in arrival order, and marks each done; the other callers wait for
// their own mark and never touch the mutex. Under contention the mutex then
// changes hands once per batch, not once per section: the time between two
// sections is no longer another thread's wake-up, and the sections run back
// to back on one core, whose cache holds the state they share.
//
// The mutex stays the only guard of that state: code that takes it directly
// (rare, long paths) excludes the batches as before.
#ifndef TUNEFLEET_SERVER_LOCK_COMBINER_H_
#define TUNEFLEET_SERVER_LOCK_COMBINER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use.
class LockCombiner {
 public:
  // `mu` must outlive the combiner.
  explicit LockCombiner(absl::Mutex* mu) : mu_(mu) {}

  LockCombiner(const LockCombiner&) = delete;
  LockCombiner& operator=(const LockCombiner&) = delete;

  // Runs `section` with the mutex held, on this thread or on another caller's,
  // and returns once it has run. A section starts with `mu.AssertHeld()` (for
  // the thread-safety analysis); it must not block, take the mutex, or call
  // Run. REQUIRES: the caller does not hold the mutex.
  void Run(absl::FunctionRef<void()> section) ABSL_LOCKS_EXCLUDED(queue_mu_);

  // Batches run, and sections run in them, since construction: their ratio
  // is the mean batch (1 when nobody contends).
  int64_t batches() const { return batches_.load(std::memory_order_relaxed); }
  int64_t sections() const { return sections_.load(std::memory_order_relaxed); }
  // Sections queued for the next batch.
  size_t queued() ABSL_LOCKS_EXCLUDED(queue_mu_);

 private:
  struct Pending {
    absl::FunctionRef<void()> section;
    bool done = false;
  };
  // Runs `batch` with the mutex held. A section that throws ends the process
  // here: a batch left half-run would hold the mutex and its callers for good.
  void RunBatch(const std::vector<Pending*>& batch) noexcept;

  absl::Mutex* const mu_;
  absl::Mutex queue_mu_;
  std::vector<Pending*> queue_ ABSL_GUARDED_BY(queue_mu_);
  bool combining_ ABSL_GUARDED_BY(queue_mu_) = false;
  std::atomic<int64_t> batches_{0};
  std::atomic<int64_t> sections_{0};
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_LOCK_COMBINER_H_
