// CallPool: a fixed set of threads that run RPC bodies which may block (on
// the store or the JobManager's lock), so that gRPC's callback threads never
// do and the number of threads does not grow with the number of callers.
//
// The pool's threads may run below the process's CPU priority (`nice`), as
// a database's background threads run below its foreground ones: when the
// core is saturated, the calls gRPC's own threads answer (an application's
// GetBestConfig, an index lookup) are scheduled before the queued bulk.
#ifndef TUNEFLEET_SERVER_CALL_POOL_H_
#define TUNEFLEET_SERVER_CALL_POOL_H_

#include <atomic>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use. Calls run in the order they came,
// at most `threads` at once.
class CallPool {
 public:
  struct Options {
    int threads = 1;  // REQUIRES: >= 1
    // Added to each thread's nice value (Linux: a per-thread attribute), at
    // most up to 19; 0 leaves the threads at the process's priority.
    int nice = 0;
    std::string name = "call-pool";  // the threads' name (15 bytes at most shown)
  };

  explicit CallPool(Options options);
  // Runs every call already queued, then joins the threads.
  ~CallPool();

  void Run(std::function<void()> call);

 private:
  void Work();

  const Options options_;
  std::atomic<bool> warned_{false};  // that the priority could not be lowered
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_CALL_POOL_H_
