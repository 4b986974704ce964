#include "server/submit_quotas.h"

#include "absl/strings/str_cat.h"

namespace tunefleet::server {
namespace {

int64_t HourOf(absl::Time time) { return absl::ToUnixSeconds(time) / 3600; }

}  // namespace

int64_t SubmitQuotas::Sum(const Day& day, int64_t hour) const {
  int64_t sum = 0;
  for (const Bucket& bucket : day) {
    if (bucket.hour > hour - 24 && bucket.hour <= hour) sum += bucket.trials;
  }
  return sum;
}

absl::Status SubmitQuotas::CheckSubmit(const std::string& owner, int active_jobs,
                                       absl::Time now) {
  if (owner.empty()) return absl::OkStatus();
  if (options_.max_active_jobs > 0 && active_jobs >= options_.max_active_jobs) {
    return absl::ResourceExhaustedError(
        absl::StrCat(owner, " has ", active_jobs, " unfinished jobs, the most allowed: "
                     "wait for one to finish or cancel one"));
  }
  const int64_t trials = TrialsLastDay(owner, now);
  if (options_.max_trials_per_day > 0 && trials >= options_.max_trials_per_day) {
    return absl::ResourceExhaustedError(absl::StrCat(
        owner, "'s jobs measured ", trials, " trials in the last 24 hours, the most allowed (",
        options_.max_trials_per_day, ")"));
  }
  return absl::OkStatus();
}

void SubmitQuotas::CountTrials(const std::string& owner, int64_t trials, absl::Time now) {
  if (owner.empty() || trials <= 0) return;
  const int64_t hour = HourOf(now);
  absl::MutexLock lock(&mu_);
  Bucket& bucket = days_[owner][hour % 24];
  if (bucket.hour != hour) bucket = Bucket{hour, 0};
  bucket.trials += trials;
}

int64_t SubmitQuotas::TrialsLastDay(const std::string& owner, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = days_.find(owner);
  return it == days_.end() ? 0 : Sum(it->second, HourOf(now));
}

}  // namespace tunefleet::server
