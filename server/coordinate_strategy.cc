#include "server/coordinate_strategy.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/calibration.h"
#include "server/stop_rules.h"
#include "server/valid_configs.h"

namespace tunefleet::server {

ParamGroups GroupParams(const v1::KernelSpec& spec) {
  ParamGroups groups;
  absl::flat_hash_map<std::string, int> index;
  for (const v1::Parameter& param : spec.params()) {
    const size_t at = param.name().find(kGroupSeparator);
    const std::string name = at == std::string::npos || at == 0 ? param.name()
                                                                 : param.name().substr(0, at);
    auto [it, added] = index.try_emplace(name, static_cast<int>(groups.names.size()));
    if (added) groups.names.push_back(name);
    groups.group_of_param.push_back(it->second);
  }
  return groups;
}

namespace {

class CoordinateStrategy : public SearchStrategy {
 public:
  CoordinateStrategy(ConfigSpace* space, int64_t budget, std::vector<uint64_t> leading,
                     std::vector<std::vector<int>> group_params, int64_t estimate)
      : space_(space),
        digits_(space->spec()),
        budget_(budget),
        group_params_(std::move(group_params)),
        estimate_(std::min(budget, estimate)),
        walk_(space) {
    phase_ = std::move(leading);
  }

  std::vector<uint64_t> Propose(int max) override {
    std::vector<uint64_t> out;
    while (static_cast<int>(out.size()) < max && !Exhausted()) {
      if (next_ < phase_.size()) {
        const uint64_t ordinal = phase_[next_++];
        if (!seen_.insert(ordinal).second) continue;  // restored meanwhile
        waiting_.insert(ordinal);
        out.push_back(ordinal);
        continue;
      }
      if (!waiting_.empty()) break;  // the phase's results decide the next one
      NextPhase();
    }
    return out;
  }

  void Observe(uint64_t ordinal, const v1::TrialResult& result) override {
    seen_.insert(ordinal);  // a restored trial counts against the budget too
    const bool awaited = waiting_.erase(ordinal) > 0;
    if (result.status() == v1::TRIAL_STATUS_OK && !result.cut_early()) {
      const double time = CalibratedTime(result.measurement());
      times_[ordinal] = time;
      if (!best_.has_value() || time < best_time_ * (1 - kMinImprovement)) {
        best_ = ordinal;
        best_time_ = time;
      }
    }
    // The phase's last result: the next phase is made now, so that
    // Exhausted() says at once whether the search converged.
    if (awaited && waiting_.empty() && next_ >= phase_.size() && !Exhausted()) NextPhase();
  }

  // The best is chosen again from the results that stand; the incumbent
  // moves to it at the next phase.
  void Amend(uint64_t ordinal, const std::optional<v1::TrialResult>& trusted) override {
    times_.erase(ordinal);
    if (trusted.has_value() && trusted->status() == v1::TRIAL_STATUS_OK && !trusted->cut_early()) {
      times_[ordinal] = CalibratedTime(trusted->measurement());
    }
    // With nothing standing, the walk keeps its place.
    std::optional<uint64_t> best;
    double best_time = 0;
    for (const auto& [measured, time] : times_) {
      if (!best.has_value() || time < best_time || (time == best_time && measured < *best)) {
        best = measured;
        best_time = time;
      }
    }
    if (best.has_value()) {
      best_ = best;
      best_time_ = best_time;
    }
  }

  bool Exhausted() const override { return converged_ || ended_ || proposed() >= budget_; }
  int64_t planned_total() const override {
    return Exhausted() ? proposed() : std::max(estimate_, proposed() + 1);
  }
  bool covers_space() const override { return false; }
  bool converged() const override { return converged_; }
  bool waiting() const override {
    return !Exhausted() && next_ >= phase_.size() && !waiting_.empty();
  }

 private:
  // Configs proposed or restored.
  int64_t proposed() const { return static_cast<int64_t>(seen_.size()); }

  // Called once the phase's configs all have results: moves the incumbent
  // and makes the next phase (or ends the search).
  void NextPhase() {
    phase_.clear();
    next_ = 0;
    if (!incumbent_.has_value()) incumbent_ = best_;  // the first config that passed
    if (!incumbent_.has_value()) {
      WalkOn();
      return;
    }
    if (group_ >= 0) {  // a group's phase ended (groups start once there is an incumbent)
      if (*best_ != *incumbent_) {
        // The group that moved it is settled at the new incumbent, unless a
        // restored result from outside the group's slice moved it.
        settled_ = OnlyGroupDiffers(*best_, *incumbent_, group_params_[group_]) ? 1 : 0;
        incumbent_ = best_;
      } else {
        ++settled_;
      }
    }
    const int groups = static_cast<int>(group_params_.size());
    while (phase_.empty()) {
      if (settled_ >= groups) {
        converged_ = true;
        return;
      }
      group_ = (group_ + 1) % groups;
      phase_ = Slice(group_params_[group_]);
      if (phase_.empty()) ++settled_;  // nothing new to try in this group
    }
  }

  // Nothing passed yet: the next valid configs in ordinal order, or the end
  // once the walk is done or kDefaultTrialBudget of them were tried.
  void WalkOn() {
    uint64_t ordinal = 0;
    while (static_cast<int>(phase_.size()) < kWalkBatch && walked_ < kDefaultTrialBudget &&
           walk_.Next(&ordinal)) {
      if (seen_.contains(ordinal)) continue;
      phase_.push_back(ordinal);
      ++walked_;
    }
    if (phase_.empty()) ended_ = true;
  }

  bool OnlyGroupDiffers(uint64_t a, uint64_t b, const std::vector<int>& params) const {
    std::vector<int> x = digits_.Digits(a);
    std::vector<int> y = digits_.Digits(b);
    for (int p : params) x[p] = y[p];
    return x == y;
  }

  // The valid configs not measured yet that differ from the incumbent in
  // `params` alone, in ordinal order (the order their digits are walked in).
  std::vector<uint64_t> Slice(const std::vector<int>& params) {
    std::vector<int> digits = digits_.Digits(*incumbent_);
    for (int p : params) digits[p] = 0;
    std::vector<uint64_t> out;
    while (true) {
      const uint64_t ordinal = digits_.Ordinal(digits);
      if (!seen_.contains(ordinal)) {
        space_->Bind(ordinal);
        if (space_->Valid()) out.push_back(ordinal);
      }
      // The next combination of the group's digits, the last param fastest.
      int i = static_cast<int>(params.size()) - 1;
      for (; i >= 0; --i) {
        if (++digits[params[i]] < digits_.radix(params[i])) break;
        digits[params[i]] = 0;
      }
      if (i < 0) break;
    }
    return out;
  }

  ConfigSpace* space_;
  const ConfigDigits digits_;
  const int64_t budget_;
  const std::vector<std::vector<int>> group_params_;  // param indices of each group
  const int64_t estimate_;  // the configs of one round: planned_total until known
  ConfigEnumerator walk_;   // the valid configs in order, while none has passed
  std::vector<uint64_t> phase_;  // configs of the current phase
  size_t next_ = 0;              // the first of phase_ not proposed yet
  absl::flat_hash_set<uint64_t> seen_;     // proposed or observed: what the budget counts
  absl::flat_hash_set<uint64_t> waiting_;  // proposed, no result yet
  std::optional<uint64_t> best_;           // the fastest OK result so far
  double best_time_ = 0;                   // its calibrated time
  absl::flat_hash_map<uint64_t, double> times_;  // every OK result's calibrated time
  std::optional<uint64_t> incumbent_;
  int group_ = -1;    // the group of the current phase; -1 before the first
  int settled_ = 0;   // groups in a row searched from the incumbent without moving it
  int64_t walked_ = 0;    // proposed by the walk while nothing passed
  bool converged_ = false;
  bool ended_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SearchStrategy>> MakeCoordinateStrategy(
    ConfigSpace* space, int64_t budget, std::vector<uint64_t> leading) {
  const ParamGroups groups = GroupParams(space->spec());
  std::vector<std::vector<int>> group_params(groups.names.size());
  for (size_t p = 0; p < groups.group_of_param.size(); ++p) {
    group_params[groups.group_of_param[p]].push_back(static_cast<int>(p));
  }
  int64_t estimate = 1;
  for (size_t g = 0; g < group_params.size(); ++g) {
    int64_t combinations = 1;
    for (int p : group_params[g]) {
      combinations *= std::max(1, space->spec().params(p).values_size());
      if (combinations > kMaxGroupConfigs) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the coordinate strategy's group ", groups.names[g], " has more than ",
            kMaxGroupConfigs,
            " combinations of values; split its params into groups (",
            groups.names[g], kGroupSeparator, "NAME)"));
      }
    }
    estimate += combinations - 1;
  }
  uint64_t first = 0;
  if (leading.empty() && !ConfigEnumerator(space).Next(&first)) {
    return absl::InvalidArgumentError(
        "the config space is empty: no config satisfies every constraint");
  }
  return std::make_unique<CoordinateStrategy>(space, budget, std::move(leading),
                                              std::move(group_params), estimate);
}

}  // namespace tunefleet::server
