#include "worker/failed_prepares.h"

namespace tunefleet::worker {

std::optional<v1::TrialResult> FailedPrepares::Find(const std::string& job_key) const {
  absl::MutexLock lock(&mu_);
  auto it = failures_.find(job_key);
  if (it == failures_.end()) return std::nullopt;
  return it->second;
}

void FailedPrepares::Add(const std::string& job_key, const v1::TrialResult& failure) {
  absl::MutexLock lock(&mu_);
  if (failures_.size() >= capacity_) failures_.clear();
  failures_[job_key] = failure;
}

}  // namespace tunefleet::worker
