// JobDriver: keeps a coordinator supplied with tuning jobs from a thread of
// its own, a fixed number unfinished at any time, and counts the finished.
#ifndef TUNEFLEET_BENCH_JOB_DRIVER_H_
#define TUNEFLEET_BENCH_JOB_DRIVER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet::bench {

struct JobDriverOptions {
  std::string address;  // the coordinator
  // The spec of the job with this index (0, 1, ...).
  std::function<v1::JobSpec(int64_t index)> make_job;
  int in_flight = 2;        // unfinished jobs kept; default 2
  int64_t max_jobs = 10'000;  // submitted at most; default 10,000
  absl::Time deadline = absl::InfiniteFuture();  // stops submitting and polling then
  absl::Duration poll_every = absl::Milliseconds(5);  // while the oldest is unfinished
  // Called on the driver's thread after each finished job with the count.
  std::function<void(int64_t finished)> on_finished = [](int64_t) {};
};

// Thread-safety: safe for concurrent use. Jobs finish roughly in submission
// order (the coordinator leases the oldest first), so only the oldest
// unfinished job is polled (GetJob), which keeps the polling cheap.
class JobDriver {
 public:
  explicit JobDriver(JobDriverOptions options);
  // Stop().
  ~JobDriver();

  // Returns once max_jobs jobs have finished, the deadline passed, or the
  // driver stopped on an error (see error()).
  void WaitUntilDone();
  void Stop();

  int64_t submitted() const { return submitted_.load(); }
  int64_t finished() const { return finished_.load(); }
  int64_t failed() const { return failed_.load(); }  // finished but not SUCCEEDED
  std::string error();  // the first failed call, empty if none

 private:
  void Run();
  // Submits jobs until `in_flight` are unfinished; false on an error.
  bool Refill();
  // Polls the oldest unfinished job; false on an error.
  bool PollOldest();
  void Fail(const std::string& what, const grpc::Status& status);

  const JobDriverOptions options_;
  std::unique_ptr<v1::TuningService::Stub> stub_;
  std::deque<std::string> unfinished_;  // driver thread only, oldest first
  std::atomic<int64_t> submitted_{0};
  std::atomic<int64_t> finished_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::string error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace tunefleet::bench

#endif  // TUNEFLEET_BENCH_JOB_DRIVER_H_
