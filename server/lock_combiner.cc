#include "server/lock_combiner.h"

#include <vector>

namespace tunefleet::server {

void LockCombiner::Run(absl::FunctionRef<void()> section) {
  Pending mine{section};
  queue_mu_.Lock();
  queue_.push_back(&mine);
  auto turn = [this, &mine]() ABSL_SHARED_LOCKS_REQUIRED(queue_mu_) {
    return mine.done || !combining_;
  };
  queue_mu_.Await(absl::Condition(&turn));
  if (mine.done) {  // a combiner ran it
    queue_mu_.Unlock();
    return;
  }
  // This caller combines one batch: every section queued until now, its own
  // among them. Those queued meanwhile wait for the next combiner.
  combining_ = true;
  std::vector<Pending*> batch;
  batch.swap(queue_);
  queue_mu_.Unlock();
  RunBatch(batch);
  batches_.fetch_add(1, std::memory_order_relaxed);
  sections_.fetch_add(static_cast<int64_t>(batch.size()), std::memory_order_relaxed);
  queue_mu_.Lock();
  for (Pending* pending : batch) pending->done = true;
  combining_ = false;
  queue_mu_.Unlock();  // wakes the callers whose sections ran, and the next combiner
}

void LockCombiner::RunBatch(const std::vector<Pending*>& batch) noexcept {
  absl::MutexLock lock(mu_);
  for (Pending* pending : batch) pending->section();
}

size_t LockCombiner::queued() {
  absl::MutexLock lock(&queue_mu_);
  return queue_.size();
}

}  // namespace tunefleet::server
