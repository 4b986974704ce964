// The jobs whose Prepare failed on this worker, by job key, with the
// failure their trials get. Shared by the executors of a worker's devices,
// so that a job that spun or crashed in one device's child is not prepared
// again on another: a worker spends a job's prepare deadline at most once
// per device that was already preparing it when the first one failed.
#ifndef TUNEFLEET_WORKER_FAILED_PREPARES_H_
#define TUNEFLEET_WORKER_FAILED_PREPARES_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::worker {

// Thread-safety: safe; every method may be called from any thread.
class FailedPrepares {
 public:
  // Remembers at most `capacity` jobs, then forgets them all at once (a
  // forgotten job costs one more Prepare). REQUIRES: capacity > 0.
  explicit FailedPrepares(size_t capacity = 1024) : capacity_(capacity) {}

  // The failure recorded for `job_key`, if any.
  std::optional<v1::TrialResult> Find(const std::string& job_key) const;
  void Add(const std::string& job_key, const v1::TrialResult& failure);

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, v1::TrialResult> failures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::worker

#endif  // TUNEFLEET_WORKER_FAILED_PREPARES_H_
