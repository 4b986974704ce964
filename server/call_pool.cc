#include "server/call_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include "common/thread_priority.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {

CallPool::CallPool(Options options) : options_(std::move(options)) {
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), options_.name.substr(0, 15).c_str());
      if (absl::Status lowered = LowerThisThreadPriority(options_.nice); !lowered.ok()) {
        if (!warned_.exchange(true)) {  // once, not once per thread
          spdlog::warn("{} pool: {}", options_.name, lowered.ToString());
        }
      }
      Work();
    });
  }
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
