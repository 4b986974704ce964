// SubmitQuotas: what one principal may ask of the fleet. A submission is
// refused (ResourceExhausted) when its principal already has
// `max_active_jobs` unfinished jobs, or when the trials measured for its
// jobs over the last 24 hours reached `max_trials_per_day`. Trials are
// counted in hourly buckets since the coordinator started. The anonymous
// principal of an unauthenticated coordinator ("") has no quota.
#ifndef TUNEFLEET_SERVER_SUBMIT_QUOTAS_H_
#define TUNEFLEET_SERVER_SUBMIT_QUOTAS_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tunefleet::server {

struct QuotaOptions {
  // Unfinished jobs one principal may have; 0: no limit. Default 100.
  int max_active_jobs = 100;
  // Trials measured for one principal's jobs over 24 hours; 0: no limit.
  // Default 5,000,000.
  int64_t max_trials_per_day = 5'000'000;
};

// Thread-safety: safe for concurrent use.
class SubmitQuotas {
 public:
  explicit SubmitQuotas(const QuotaOptions& options) : options_(options) {}

  // OK when `owner`, who has `active_jobs` unfinished jobs, may submit
  // another at `now`; ResourceExhausted naming the quota otherwise.
  absl::Status CheckSubmit(const std::string& owner, int active_jobs, absl::Time now);
  // Counts `trials` measured for `owner` at `now`.
  void CountTrials(const std::string& owner, int64_t trials, absl::Time now);
  // Trials counted for `owner` over the 24 hours before `now`.
  int64_t TrialsLastDay(const std::string& owner, absl::Time now);

 private:
  struct Bucket {
    int64_t hour = -1;  // hours since the epoch
    int64_t trials = 0;
  };
  using Day = std::array<Bucket, 24>;
  int64_t Sum(const Day& day, int64_t hour) const;

  const QuotaOptions options_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Day> days_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_SUBMIT_QUOTAS_H_
