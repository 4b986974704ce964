// CallPool: a fixed set of threads that run RPC bodies which may block (on
// the store), so that gRPC's callback threads never do and the number of
// threads does not grow with the number of callers.
#ifndef TUNEFLEET_SERVER_CALL_POOL_H_
#define TUNEFLEET_SERVER_CALL_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use. Calls run in the order they came,
// at most `threads` at once.
class CallPool {
 public:
  // REQUIRES: threads >= 1.
  explicit CallPool(int threads);
  // Runs every call already queued, then joins the threads.
  ~CallPool();

  void Run(std::function<void()> call);

 private:
  void Work();

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_CALL_POOL_H_
