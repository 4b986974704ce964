// A fixed set of threads that run Compiler::Compile, so that the next configs
// compile while the benchmark child measures the current one.
#ifndef TUNEFLEET_WORKER_COMPILE_POOL_H_
#define TUNEFLEET_WORKER_COMPILE_POOL_H_

#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "worker/backend.h"
#include "worker/idle_meter.h"

namespace tunefleet::worker {

// Thread-safety: thread-safe. Jobs start in submission order.
class CompilePool {
 public:
  using Result = absl::StatusOr<CompileOutcome>;
  using CancelFlag = std::shared_ptr<const std::atomic<bool>>;

  // REQUIRES: `compiler` outlives the pool; threads >= 1. `meter` (may be
  // null; must outlive the pool) counts each thread busy while it compiles.
  CompilePool(Compiler* compiler, int threads, IdleMeter* meter = nullptr);
  // Finishes the running compiles, resolves queued ones as Cancelled, joins.
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Queues `job`. The future resolves to Compile's result, or to Cancelled
  // when `cancel` is set before a thread picks the job up. The job's spec
  // and sources must stay alive until the future resolves.
  std::shared_future<Result> Submit(CompileJob job, CancelFlag cancel = nullptr);

  Compiler* compiler() const { return compiler_; }

 private:
  struct Task {
    CompileJob job;
    CancelFlag cancel;
    std::promise<Result> promise;
  };
  void Loop();

  Compiler* const compiler_;
  IdleMeter* const meter_;
  absl::Mutex mu_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_COMPILE_POOL_H_
