#include "worker/compile_pool.h"

#include <exception>

namespace tunefleet::worker {

CompilePool::CompilePool(Compiler* compiler, int threads, IdleMeter* meter)
    : compiler_(compiler), meter_(meter) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { Loop(); });
}

CompilePool::~CompilePool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
  for (Task& task : queue_) {
    task.promise.set_value(absl::CancelledError("compile pool shut down"));
  }
}

std::shared_future<CompilePool::Result> CompilePool::Submit(CompileJob job,
                                                            CancelFlag cancel) {
  Task task{std::move(job), std::move(cancel), {}};
  std::shared_future<Result> future = task.promise.get_future().share();
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(task));
  return future;
}

void CompilePool::Loop() {
  while (true) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    if (task.cancel != nullptr && task.cancel->load()) {
      task.promise.set_value(absl::CancelledError("compile cancelled"));
      continue;
    }
    BusyScope busy(meter_);
    task.promise.set_value(compiler_->Compile(task.job));
  }
}

}  // namespace tunefleet::worker
