#include "server/target_trials.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/calibration.h"
#include "common/config_text.h"
#include "server/tie_set.h"

namespace tunefleet::server {
namespace {

constexpr size_t kFastestKept = 16;

}  // namespace

TargetTrials::TargetTrials(std::unique_ptr<ConfigSpace> space,
                           std::unique_ptr<SearchStrategy> strategy,
                           int max_attempts,
                           std::optional<uint64_t> default_ordinal,
                           int finalists, int plateau_batches)
    : space_(std::move(space)),
      strategy_(std::move(strategy)),
      max_attempts_(max_attempts),
      default_ordinal_(default_ordinal),
      plateau_(plateau_batches),
      finalists_(finalists) {}

void TargetTrials::NoteLoss(const Holder& holder, std::vector<std::string>* lost_by) {
  if (!holder.principal.empty() &&
      std::find(lost_by->begin(), lost_by->end(), holder.principal) == lost_by->end()) {
    lost_by->push_back(holder.principal);
  }
}

bool TargetTrials::LeaveToOthers(const Holder& holder, const std::vector<std::string>& lost_by) {
  return !holder.principal.empty() &&
         std::find(lost_by.begin(), lost_by.end(), holder.principal) != lost_by.end() &&
         holder.AnyLiveBesides(lost_by);
}

std::vector<uint64_t> TargetTrials::Take(int max, const std::string& lease_id,
                                         int64_t epoch, bool* finalists, const Holder& holder) {
  *finalists = false;
  std::vector<uint64_t> taken;
  for (auto it = requeued_.begin(); it != requeued_.end() && static_cast<int>(taken.size()) < max;) {
    if (LeaveToOthers(holder, slots_[*it].lost_by)) {
      ++it;  // for a principal that has not lost it
      continue;
    }
    taken.push_back(*it);
    it = requeued_.erase(it);
  }
  const size_t requeued = taken.size();
  while (static_cast<int>(taken.size()) < max && !ahead_.empty()) {
    taken.push_back(ahead_.front());
    ahead_.pop_front();
  }
  ProposeNew(max, &taken);
  for (uint64_t ordinal : taken) {
    Slot& slot = slots_[ordinal];
    slot.state = SlotState::kLeased;
    slot.lease_id = lease_id;
    slot.epoch = epoch;
  }
  leased_ += static_cast<int64_t>(taken.size());
  plateau_.Proposed(std::vector<uint64_t>(taken.begin() + requeued, taken.end()));
  if (!taken.empty()) return taken;
  MaybeStartFinals();
  if (finals_ != Finals::kWaiting || LeaveToOthers(holder, finals_lost_by_)) return taken;
  finals_ = Finals::kLeased;
  finals_closed_ = true;
  finals_lease_ = lease_id;
  finals_epoch_ = epoch;
  finals_results_.clear();
  *finalists = true;
  return finalist_ordinals_;
}

void TargetTrials::ProposeNew(int max, std::vector<uint64_t>* into) {
  while (static_cast<int>(into->size()) < max && !ProposalsOver()) {
    std::vector<uint64_t> proposed = strategy_->Propose(max - static_cast<int>(into->size()));
    if (proposed.empty()) break;
    for (uint64_t ordinal : proposed) {
      // A restored (already measured) config is not measured again, and no
      // config is handed out twice at once.
      if (slots_.contains(ordinal) ||
          std::find(into->begin(), into->end(), ordinal) != into->end()) {
        continue;
      }
      into->push_back(ordinal);
    }
  }
}

std::vector<uint64_t> TargetTrials::Adopt(const std::vector<uint64_t>& ordinals,
                                          const std::function<bool(uint64_t)>& in_hand,
                                          const std::string& lease_id, int64_t epoch,
                                          const Holder& holder) {
  std::vector<uint64_t> taken;
  if (finals_closed_ || finals_ != Finals::kNotYet) return taken;
  std::vector<uint64_t> proposed;  // handed out here for the first time
  for (uint64_t ordinal : ordinals) {
    if (ordinal >= space_->full_size() ||
        std::find(taken.begin(), taken.end(), ordinal) != taken.end()) {
      continue;
    }
    auto slot = slots_.find(ordinal);
    if (slot == slots_.end()) {
      auto ahead = std::find(ahead_.begin(), ahead_.end(), ordinal);
      if (ahead != ahead_.end()) {
        ahead_.erase(ahead);
      } else if (ProposalsOver()) {
        continue;  // the search asks for nothing more
      }
      proposed.push_back(ordinal);
      ++leased_;
    } else if (slot->second.state == SlotState::kWaiting) {
      auto queued = std::find(requeued_.begin(), requeued_.end(), ordinal);
      if (queued == requeued_.end() || LeaveToOthers(holder, slot->second.lost_by)) continue;
      requeued_.erase(queued);
      ++leased_;
    } else if (slot->second.state != SlotState::kLeased || !in_hand(ordinal)) {
      continue;  // measured, or leased and not measured yet either
    }
    Slot& held = slots_[ordinal];
    held.state = SlotState::kLeased;
    held.lease_id = lease_id;
    held.epoch = epoch;
    taken.push_back(ordinal);
  }
  plateau_.Proposed(proposed);
  return taken;
}

std::vector<uint64_t> TargetTrials::ProposeAhead(int max, int limit) {
  std::vector<uint64_t> proposed;
  ProposeNew(std::min(max, limit - static_cast<int>(ahead_.size())), &proposed);
  ahead_.insert(ahead_.end(), proposed.begin(), proposed.end());
  return proposed;
}

bool TargetTrials::Complete(uint64_t ordinal, const std::string& lease_id,
                            int64_t epoch, const v1::TrialResult& result,
                            const std::string& principal) {
  if (finals_ == Finals::kLeased && lease_id == finals_lease_ && epoch == finals_epoch_) {
    finals_principal_ = principal;
    return CompleteFinalist(ordinal, result);
  }
  auto it = slots_.find(ordinal);
  if (it == slots_.end() || it->second.state != SlotState::kLeased ||
      it->second.lease_id != lease_id || it->second.epoch != epoch) {
    return false;
  }
  --leased_;
  Record(ordinal, result, principal);
  MaybeStartFinals();
  return true;
}

bool TargetTrials::Recheck(uint64_t ordinal, bool referee, std::vector<std::string> not_by,
                           absl::Time deadline) {
  auto slot = slots_.find(ordinal);
  if (finals_closed_ || (stopped_ == v1::STOP_REASON_TIME_BUDGET && !referee) ||
      slot == slots_.end() || slot->second.state != SlotState::kDone ||
      rechecks_.contains(ordinal)) {
    return false;
  }
  rechecks_[ordinal] = QueuedRecheck{referee, std::move(not_by), deadline, "", 0};
  waiting_rechecks_.push_back(ordinal);
  ++rechecks_waiting_;
  // A finalists round not yet leased (or a search round that decided) waits:
  // MaybeStartFinals picks the finalists again once the checks end.
  if (finals_ == Finals::kDone) {
    // The search round's decision moved its served member first: rank again.
    std::stable_sort(fastest_.begin(), fastest_.end(),
                     [](const TrialOutcome& a, const TrialOutcome& b) {
                       return CalibratedTime(a.result.measurement()) <
                              CalibratedTime(b.result.measurement());
                     });
  }
  finals_ = Finals::kNotYet;
  return true;
}

bool TargetTrials::MayTake(const QueuedRecheck& queued, const std::string& principal) const {
  return queued.lease_id.empty() &&
         std::find(queued.not_by.begin(), queued.not_by.end(), principal) == queued.not_by.end();
}

namespace {
// How many waiting rechecks one lease request looks at: a principal that may
// take none of a long queue (a suspect's own claims) pays no more.
constexpr int kRecheckScan = 256;
}  // namespace

std::vector<uint64_t> TargetTrials::TakeRechecks(int max, const std::string& principal,
                                                 const std::string& lease_id, int64_t epoch,
                                                 bool* referee) {
  std::vector<uint64_t> taken;
  int scanned = 0;
  for (auto it = waiting_rechecks_.begin();
       it != waiting_rechecks_.end() && static_cast<int>(taken.size()) < max &&
       scanned < kRecheckScan;) {
    auto queued = rechecks_.find(*it);
    if (queued == rechecks_.end() || !queued->second.lease_id.empty()) {
      it = waiting_rechecks_.erase(it);  // leased or gone since it began to wait
      continue;
    }
    ++scanned;
    if (!MayTake(queued->second, principal) ||
        (!taken.empty() && queued->second.referee != *referee)) {
      ++it;
      continue;
    }
    *referee = queued->second.referee;
    queued->second.lease_id = lease_id;
    queued->second.epoch = epoch;
    --rechecks_waiting_;
    taken.push_back(*it);
    it = waiting_rechecks_.erase(it);
  }
  return taken;
}

bool TargetTrials::HasRecheckFor(const std::string& principal) const {
  if (rechecks_waiting_ == 0) return false;
  int scanned = 0;
  for (uint64_t ordinal : waiting_rechecks_) {
    if (++scanned > kRecheckScan) return false;
    auto queued = rechecks_.find(ordinal);
    if (queued != rechecks_.end() && MayTake(queued->second, principal)) return true;
  }
  return false;
}

bool TargetTrials::HoldsRecheck(uint64_t ordinal, const std::string& lease_id,
                                int64_t epoch) const {
  auto queued = rechecks_.find(ordinal);
  return queued != rechecks_.end() && !lease_id.empty() && queued->second.lease_id == lease_id &&
         queued->second.epoch == epoch;
}

void TargetTrials::EndRecheck(uint64_t ordinal) {
  auto queued = rechecks_.find(ordinal);
  if (queued == rechecks_.end()) return;
  if (queued->second.lease_id.empty()) --rechecks_waiting_;
  rechecks_.erase(queued);
}

void TargetTrials::ReleaseRecheck(uint64_t ordinal, const std::string& lease_id, int64_t epoch,
                                  const std::string& principal, absl::Time deadline) {
  if (!HoldsRecheck(ordinal, lease_id, epoch)) return;
  QueuedRecheck& queued = rechecks_.at(ordinal);
  queued.lease_id.clear();
  // It let the check go: another principal takes it, or nobody.
  if (std::find(queued.not_by.begin(), queued.not_by.end(), principal) == queued.not_by.end()) {
    queued.not_by.push_back(principal);
  }
  queued.deadline = deadline;
  waiting_rechecks_.push_back(ordinal);
  ++rechecks_waiting_;
}

void TargetTrials::Rerank(uint64_t ordinal, const v1::TrialResult& result,
                          const std::string& principal) {
  std::erase_if(fastest_, [&](const TrialOutcome& o) { return o.ordinal == ordinal; });
  if (result.status() == v1::TRIAL_STATUS_OK && !result.cut_early()) {
    Rank(ordinal, result, principal);
  }
  strategy_->Amend(ordinal, result);
}

void TargetTrials::Amend(uint64_t ordinal, const std::optional<v1::TrialResult>& trusted) {
  strategy_->Amend(ordinal, trusted);
}

std::vector<std::pair<uint64_t, bool>> TargetTrials::DropStaleRechecks(
    absl::Time now, const std::function<bool(const std::vector<std::string>&)>& takeable) {
  std::vector<std::pair<uint64_t, bool>> dropped;
  for (auto it = rechecks_.begin(); it != rechecks_.end();) {
    const QueuedRecheck& queued = it->second;
    if (queued.lease_id.empty() && (queued.deadline <= now || !takeable(queued.not_by))) {
      dropped.emplace_back(it->first, queued.referee);
      --rechecks_waiting_;
      rechecks_.erase(it++);
    } else {
      ++it;
    }
  }
  if (!dropped.empty()) MaybeStartFinals();
  return dropped;
}

std::vector<uint64_t> TargetTrials::Unrank(const std::string& principal) {
  std::vector<uint64_t> unranked;
  std::erase_if(fastest_, [&](const TrialOutcome& outcome) {
    const bool theirs = !principal.empty() && outcome.principal == principal;
    if (theirs) unranked.push_back(outcome.ordinal);
    return theirs;
  });
  return unranked;
}

bool TargetTrials::ProposalsOver() const {
  return stopped_ != v1::STOP_REASON_UNSPECIFIED || strategy_->Exhausted();
}

bool TargetTrials::SearchOver() const {
  return requeued_.empty() && ahead_.empty() && leased_ == 0 && rechecks_.empty() &&
         ProposalsOver();
}

void TargetTrials::Abandon(v1::StopReason reason) {
  stopped_ = reason;
  requeued_.clear();
  ahead_.clear();
  rechecks_.clear();
  waiting_rechecks_.clear();
  rechecks_waiting_ = 0;
  // What was never measured is dropped, so that total() is what was done
  // (a late report of a lease finds no slot: stale).
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (it->second.state == SlotState::kDone) {
      ++it;
    } else {
      slots_.erase(it++);
    }
  }
  leased_ = 0;
  finals_ = Finals::kDone;
  finals_closed_ = true;
  finals_lease_.clear();
}

void TargetTrials::StopSearch(v1::StopReason reason) {
  if (ProposalsOver()) return;
  stopped_ = reason;
  ahead_.clear();
  MaybeStartFinals();
}

v1::StopReason TargetTrials::stop_reason() const {
  if (stopped_ != v1::STOP_REASON_UNSPECIFIED) return stopped_;
  if (!strategy_->Exhausted()) return v1::STOP_REASON_UNSPECIFIED;
  if (strategy_->converged()) return v1::STOP_REASON_PLATEAU;
  return strategy_->covers_space() ? v1::STOP_REASON_SPACE_EXHAUSTED
                                   : v1::STOP_REASON_TRIAL_BUDGET;
}

void TargetTrials::Defend(uint64_t ordinal, double tolerance) {
  if (ordinal >= space_->full_size()) return;
  space_->Bind(ordinal);
  if (!space_->Valid()) return;
  defender_ = ordinal;
  defender_tolerance_ = tolerance;
}

void TargetTrials::MaybeStartFinals() {
  if (finals_ != Finals::kNotYet || !SearchOver()) return;
  finalist_ordinals_.clear();
  for (size_t i = 0; i < fastest_.size() && static_cast<int>(i) < finalists_; ++i) {
    finalist_ordinals_.push_back(fastest_[i].ordinal);
  }
  if (defender_.has_value() && !fastest_.empty() &&
      std::find(finalist_ordinals_.begin(), finalist_ordinals_.end(), *defender_) ==
          finalist_ordinals_.end()) {
    finalist_ordinals_.push_back(*defender_);
  }
  if (finalists_ >= 2 && finalist_ordinals_.size() >= 2) {
    finals_ = Finals::kWaiting;
  } else {
    finals_ = Finals::kDone;  // the search round decides
    ServedFirst(&fastest_);
  }
}

void TargetTrials::ServedFirst(std::vector<TrialOutcome>* ranked) const {
  if (ranked->empty()) return;
  std::vector<Contender> round;
  for (const TrialOutcome& outcome : *ranked) {
    const v1::Measurement& m = outcome.result.measurement();
    round.push_back(Contender{ConfigToString(space_->ConfigAt(outcome.ordinal)),
                              m.median_seconds(), m.rounds(), m.rounds_cv(),
                              m.calibration_seconds()});
  }
  const std::string defender =
      defender_.has_value() ? ConfigToString(space_->ConfigAt(*defender_)) : "";
  const size_t chosen = TieSetOf(round, defender, defender_tolerance_)->chosen;
  std::rotate(ranked->begin(), ranked->begin() + chosen, ranked->begin() + chosen + 1);
}

bool TargetTrials::CompleteFinalist(uint64_t ordinal, const v1::TrialResult& result) {
  if (std::find(finalist_ordinals_.begin(), finalist_ordinals_.end(), ordinal) ==
          finalist_ordinals_.end() ||
      finals_results_.contains(ordinal)) {
    return false;
  }
  finals_results_[ordinal] = result;
  if (finals_results_.size() == finalist_ordinals_.size()) EndFinals();
  return true;
}

// Ranks the finalists by their final measurement, ahead of everything else;
// a finalist that failed its second run is dropped from the ranking.
void TargetTrials::EndFinals() {
  finals_ = Finals::kDone;
  finals_lease_.clear();
  if (finals_results_.size() != finalist_ordinals_.size()) return;  // first round stands
  std::vector<TrialOutcome> finals;
  for (uint64_t ordinal : finalist_ordinals_) {
    const v1::TrialResult& result = finals_results_.at(ordinal);
    if (result.status() != v1::TRIAL_STATUS_OK || result.cut_early()) continue;
    finals.push_back(TrialOutcome{ordinal, result, finals_principal_});
    if (default_ordinal_ == ordinal) {
      default_seconds_ = result.measurement().median_seconds();
    }
  }
  if (finals.empty()) return;  // every finalist failed again: the first round stands
  std::sort(finals.begin(), finals.end(), [](const TrialOutcome& a, const TrialOutcome& b) {
    return CalibratedTime(a.result.measurement()) < CalibratedTime(b.result.measurement());
  });
  ServedFirst(&finals);
  for (const TrialOutcome& outcome : fastest_) {
    bool finalist = std::find(finalist_ordinals_.begin(), finalist_ordinals_.end(),
                              outcome.ordinal) != finalist_ordinals_.end();
    if (!finalist) finals.push_back(outcome);
  }
  fastest_ = std::move(finals);
}

std::optional<v1::TrialResult> TargetTrials::Release(
    uint64_t ordinal, const std::string& lease_id, int64_t epoch,
    bool expired, const Holder& holder) {
  if (finals_ == Finals::kLeased && lease_id == finals_lease_ && epoch == finals_epoch_) {
    // One release ends the whole finalists lease (they run as one round).
    if (expired) NoteLoss(holder, &finals_lost_by_);
    if (expired && ++finals_lost_ >= max_attempts_ &&
        !holder.AnyLiveBesides(finals_lost_by_)) {
      EndFinals();
    } else {
      finals_ = Finals::kWaiting;
    }
    finals_lease_.clear();
    return std::nullopt;
  }
  auto it = slots_.find(ordinal);
  if (it == slots_.end() || it->second.state != SlotState::kLeased ||
      it->second.lease_id != lease_id || it->second.epoch != epoch) {
    return std::nullopt;
  }
  Slot& slot = it->second;
  --leased_;
  slot.lease_id.clear();
  if (expired) NoteLoss(holder, &slot.lost_by);
  if (expired && ++slot.lost_leases >= max_attempts_ &&
      !holder.AnyLiveBesides(slot.lost_by)) {
    v1::TrialResult lost;
    *lost.mutable_config() = space_->ConfigAt(ordinal);
    lost.set_status(v1::TRIAL_STATUS_WORKER_LOST);
    lost.set_error(absl::StrCat("lost ", slot.lost_leases, " leases (worker died or stopped "
                                "heartbeating; lost by every live principal)"));
    Record(ordinal, lost, holder.principal);
    MaybeStartFinals();
    return lost;
  }
  slot.state = SlotState::kWaiting;
  requeued_.push_back(ordinal);
  return std::nullopt;
}

int64_t TargetTrials::ReclaimOrphans(
    const std::function<bool(const std::string& lease_id)>& held) {
  int64_t moved = 0;
  if (finals_ == Finals::kLeased && !held(finals_lease_)) {
    finals_ = Finals::kWaiting;
    finals_lease_.clear();
    moved += static_cast<int64_t>(finalist_ordinals_.size());
  }
  for (auto& [ordinal, queued] : rechecks_) {
    if (queued.lease_id.empty() || held(queued.lease_id)) continue;
    queued.lease_id.clear();
    waiting_rechecks_.push_back(ordinal);
    ++rechecks_waiting_;
    ++moved;
  }
  for (auto& [ordinal, slot] : slots_) {
    if (slot.state != SlotState::kLeased || held(slot.lease_id)) continue;
    slot.state = SlotState::kWaiting;
    slot.lease_id.clear();
    --leased_;
    requeued_.push_back(ordinal);
    ++moved;
  }
  return moved;
}

void TargetTrials::Restore(uint64_t ordinal, const v1::TrialResult& result,
                           const std::string& principal) {
  if (slots_.contains(ordinal)) return;
  Record(ordinal, result, principal);
  MaybeStartFinals();
}

void TargetTrials::Record(uint64_t ordinal, const v1::TrialResult& result,
                          const std::string& principal) {
  Slot& slot = slots_[ordinal];
  slot.state = SlotState::kDone;
  slot.lease_id.clear();
  ++done_;
  ++outcome_counts_[result.status()];
  strategy_->Observe(ordinal, result);
  const bool ranked = result.status() == v1::TRIAL_STATUS_OK && !result.cut_early();
  plateau_.Recorded(ordinal,
                    ranked ? std::optional<double>(result.measurement().median_seconds())
                           : std::nullopt,
                    best_seconds());
  if (plateau_.reached() && !ProposalsOver()) stopped_ = v1::STOP_REASON_PLATEAU;
  if (result.status() != v1::TRIAL_STATUS_OK) {
    if (first_error_.empty()) {
      // A job's reason reaches every reader: a wrong result's values (the
      // kernel's output) stay in its trial, which only the owner reads whole.
      first_error_ =
          result.status() == v1::TRIAL_STATUS_WRONG_RESULT
              ? absl::StrCat(v1::TrialStatus_Name(result.status()),
                             ": the outputs differ from the reference (the trial says where)")
              : absl::StrCat(v1::TrialStatus_Name(result.status()), ": ",
                             result.error().substr(0, 2000));
    }
    return;
  }
  if (default_ordinal_ == ordinal) {
    default_seconds_ = result.measurement().median_seconds();
  }
  if (result.cut_early()) return;  // a partial measurement: never ranked
  Rank(ordinal, result, principal);
}

void TargetTrials::Rank(uint64_t ordinal, const v1::TrialResult& result,
                        const std::string& principal) {
  // Most results rank below the kept few: nothing is copied for them.
  const double time = CalibratedTime(result.measurement());
  auto ranked = std::find_if(fastest_.begin(), fastest_.end(), [&](const TrialOutcome& o) {
    return o.ordinal == ordinal;
  });
  if (ranked != fastest_.end()) {
    if (!(time < CalibratedTime(ranked->result.measurement()))) return;
    fastest_.erase(ranked);
  }
  auto pos = std::upper_bound(fastest_.begin(), fastest_.end(), time,
                              [](double t, const TrialOutcome& o) {
                                return t < CalibratedTime(o.result.measurement());
                              });
  if (pos == fastest_.end() && fastest_.size() >= kFastestKept) return;
  fastest_.insert(pos, TrialOutcome{ordinal, result, principal});
  if (fastest_.size() > kFastestKept) fastest_.pop_back();
}

bool TargetTrials::Finished() const {
  return SearchOver() && finals_ == Finals::kDone;
}

bool TargetTrials::HasWork() const {
  return !requeued_.empty() || !ahead_.empty() || (!ProposalsOver() && !strategy_->waiting()) ||
         rechecks_waiting_ > 0 || finals_ == Finals::kWaiting;
}

int64_t TargetTrials::total() const {
  // Stopped by a rule: what was handed out (or restored) is all there will be.
  if (stopped_ != v1::STOP_REASON_UNSPECIFIED) return static_cast<int64_t>(slots_.size());
  return std::max<int64_t>(strategy_->planned_total(), done_);
}

std::optional<double> TargetTrials::best_seconds() const {
  if (fastest_.empty()) return std::nullopt;
  return fastest_.front().result.measurement().median_seconds();
}

std::vector<TrialOutcome> TargetTrials::Fastest(size_t n) const {
  return std::vector<TrialOutcome>(
      fastest_.begin(), fastest_.begin() + std::min(n, fastest_.size()));
}

}  // namespace tunefleet::server
