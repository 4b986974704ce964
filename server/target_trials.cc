#include "server/target_trials.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tunefleet::server {
namespace {

constexpr size_t kFastestKept = 16;

}  // namespace

TargetTrials::TargetTrials(std::unique_ptr<ConfigSpace> space,
                           std::unique_ptr<SearchStrategy> strategy,
                           int max_attempts,
                           std::optional<uint64_t> default_ordinal)
    : space_(std::move(space)),
      strategy_(std::move(strategy)),
      max_attempts_(max_attempts),
      default_ordinal_(default_ordinal) {}

std::vector<uint64_t> TargetTrials::Take(int max, const std::string& lease_id,
                                         int64_t epoch) {
  std::vector<uint64_t> taken;
  while (static_cast<int>(taken.size()) < max && !requeued_.empty()) {
    taken.push_back(requeued_.front());
    requeued_.pop_front();
  }
  while (static_cast<int>(taken.size()) < max && !strategy_->Exhausted()) {
    std::vector<uint64_t> proposed =
        strategy_->Propose(max - static_cast<int>(taken.size()));
    if (proposed.empty()) break;
    for (uint64_t ordinal : proposed) {
      // A restored (already measured) config is not measured again.
      if (slots_.contains(ordinal)) continue;
      taken.push_back(ordinal);
    }
  }
  for (uint64_t ordinal : taken) {
    Slot& slot = slots_[ordinal];
    slot.state = SlotState::kLeased;
    slot.lease_id = lease_id;
    slot.epoch = epoch;
  }
  leased_ += static_cast<int64_t>(taken.size());
  return taken;
}

bool TargetTrials::Complete(uint64_t ordinal, const std::string& lease_id,
                            int64_t epoch, const v1::TrialResult& result) {
  auto it = slots_.find(ordinal);
  if (it == slots_.end() || it->second.state != SlotState::kLeased ||
      it->second.lease_id != lease_id || it->second.epoch != epoch) {
    return false;
  }
  --leased_;
  Record(ordinal, result);
  return true;
}

std::optional<v1::TrialResult> TargetTrials::Release(
    uint64_t ordinal, const std::string& lease_id, int64_t epoch,
    bool expired) {
  auto it = slots_.find(ordinal);
  if (it == slots_.end() || it->second.state != SlotState::kLeased ||
      it->second.lease_id != lease_id || it->second.epoch != epoch) {
    return std::nullopt;
  }
  Slot& slot = it->second;
  --leased_;
  slot.lease_id.clear();
  if (expired && ++slot.lost_leases >= max_attempts_) {
    v1::TrialResult lost;
    *lost.mutable_config() = space_->ConfigAt(ordinal);
    lost.set_status(v1::TRIAL_STATUS_WORKER_LOST);
    lost.set_error(absl::StrCat("lost ", slot.lost_leases,
                                " leases (worker died or stopped heartbeating)"));
    Record(ordinal, lost);
    return lost;
  }
  slot.state = SlotState::kWaiting;
  requeued_.push_back(ordinal);
  return std::nullopt;
}

void TargetTrials::Restore(uint64_t ordinal, const v1::TrialResult& result) {
  if (slots_.contains(ordinal)) return;
  Record(ordinal, result);
}

void TargetTrials::Record(uint64_t ordinal, const v1::TrialResult& result) {
  Slot& slot = slots_[ordinal];
  slot.state = SlotState::kDone;
  slot.lease_id.clear();
  ++done_;
  ++outcome_counts_[result.status()];
  strategy_->Observe(ordinal, result);
  if (result.status() != v1::TRIAL_STATUS_OK) {
    if (first_error_.empty()) {
      first_error_ = absl::StrCat(v1::TrialStatus_Name(result.status()), ": ",
                                  result.error().substr(0, 2000));
    }
    return;
  }
  if (default_ordinal_ == ordinal) {
    default_seconds_ = result.measurement().median_seconds();
  }
  TrialOutcome outcome{ordinal, result};
  auto pos = std::upper_bound(
      fastest_.begin(), fastest_.end(), outcome,
      [](const TrialOutcome& a, const TrialOutcome& b) {
        return a.result.measurement().median_seconds() <
               b.result.measurement().median_seconds();
      });
  fastest_.insert(pos, std::move(outcome));
  if (fastest_.size() > kFastestKept) fastest_.pop_back();
}

bool TargetTrials::Finished() const {
  return requeued_.empty() && leased_ == 0 && strategy_->Exhausted();
}

bool TargetTrials::HasWork() const {
  return !requeued_.empty() || !strategy_->Exhausted();
}

int64_t TargetTrials::total() const {
  return std::max<int64_t>(strategy_->planned_total(), done_);
}

std::vector<TrialOutcome> TargetTrials::Fastest(size_t n) const {
  return std::vector<TrialOutcome>(
      fastest_.begin(), fastest_.begin() + std::min(n, fastest_.size()));
}

}  // namespace tunefleet::server
