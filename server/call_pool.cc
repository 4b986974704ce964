#include "server/call_pool.h"

namespace tunefleet::server {

CallPool::CallPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

CallPool::~CallPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

void CallPool::Run(std::function<void()> call) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(call));
}

void CallPool::Work() {
  while (true) {
    std::function<void()> call;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and nothing left
      call = std::move(queue_.front());
      queue_.pop_front();
    }
    call();
  }
}

}  // namespace tunefleet::server
