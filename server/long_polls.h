// LongPolls: the LeaseWork calls that wait for work, held as callbacks rather
// than as parked threads. One dispatcher thread tries the waiting calls again
// whenever work may have appeared, and ends each at its deadline.
#ifndef TUNEFLEET_SERVER_LONG_POLLS_H_
#define TUNEFLEET_SERVER_LONG_POLLS_H_

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/lease.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use. `done` callbacks run on the
// calling thread or on the dispatcher thread, never under a lock of this
// class; each is called exactly once.
class LongPolls {
 public:
  using Result = absl::StatusOr<std::optional<LeaseGrant>>;
  using TryLease = std::function<Result(const LeaseQuery&)>;
  using Done = std::function<void(Result)>;
  // True when the caller went away (a cancelled RPC): nothing is leased to it.
  using Cancelled = std::function<bool()>;

  // Leases from the first of `sources` that has work for the query (an
  // error of a source ends the try). REQUIRES: the sources outlive the result.
  static TryLease FirstOf(std::vector<LeaseSource*> sources);

  // `try_lease` leases without waiting. A waiting call is tried again on
  // every Notify and at least every `retry_interval`; no call waits longer
  // than `max_wait`.
  LongPolls(TryLease try_lease, absl::Duration max_wait,
            absl::Duration retry_interval = absl::Seconds(1));
  // Shuts down and joins the dispatcher.
  ~LongPolls();

  // Tries at once; when no work is there, waits up to min(wait, max_wait)
  // for some, then calls `done` with no lease. Unavailable after Shutdown.
  void Wait(const LeaseQuery& query, absl::Duration wait, Done done,
            Cancelled cancelled = nullptr);
  // The same, blocking the calling thread (for tests and tools).
  Result WaitBlocking(const LeaseQuery& query, absl::Duration wait);
  // Work may have appeared: waiting calls are tried again.
  void Notify();
  // Ends every waiting call with Unavailable and refuses new ones.
  // Idempotent.
  void Shutdown();
  // Calls waiting now.
  size_t waiting() const;

 private:
  struct Waiter {
    LeaseQuery query;
    absl::Time deadline;
    Done done;
    Cancelled cancelled;
  };
  void Dispatch();
  // Tries every waiter once; returns those still waiting.
  void TryAll(std::list<Waiter>* waiters);

  const TryLease try_lease_;
  const absl::Duration max_wait_;
  const absl::Duration retry_interval_;
  mutable absl::Mutex mu_;
  std::list<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread dispatcher_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_LONG_POLLS_H_
