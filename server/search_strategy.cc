#include "server/search_strategy.h"

#include <algorithm>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/adaptive_strategy.h"
#include "server/coordinate_strategy.h"
#include "server/valid_configs.h"

namespace tunefleet::server {
namespace {

// The learning strategies hold at most this many valid configs as runs; past
// it they draw configs by rejection from the full space.
constexpr int64_t kMaxValidHeld = int64_t{1} << 22;

// Proposes a fixed list of configs in order.
class ListStrategy : public SearchStrategy {
 public:
  ListStrategy(std::vector<uint64_t> ordinals, bool covers_space)
      : ordinals_(std::move(ordinals)), covers_space_(covers_space) {}
  std::vector<uint64_t> Propose(int max) override {
    std::vector<uint64_t> out;
    while (next_ < ordinals_.size() && static_cast<int>(out.size()) < max) {
      out.push_back(ordinals_[next_++]);
    }
    return out;
  }
  void Observe(uint64_t, const v1::TrialResult&) override {}
  bool Exhausted() const override { return next_ >= ordinals_.size(); }
  int64_t planned_total() const override {
    return static_cast<int64_t>(ordinals_.size());
  }
  bool covers_space() const override { return covers_space_; }

 private:
  std::vector<uint64_t> ordinals_;
  bool covers_space_;
  size_t next_ = 0;
};

// Every valid config: the leading configs (default, warm start) first, then
// the rest in ordinal order. Holds the valid configs as runs of consecutive
// ordinals, found when it was built.
class ExhaustiveStrategy : public SearchStrategy {
 public:
  ExhaustiveStrategy(std::vector<OrdinalRun> runs, int64_t valid_count,
                     std::vector<uint64_t> leading)
      : runs_(std::move(runs)),
        total_(valid_count),
        leading_(std::move(leading)),
        skip_(leading_.begin(), leading_.end()) {}
  std::vector<uint64_t> Propose(int max) override {
    std::vector<uint64_t> out;
    while (static_cast<int>(out.size()) < max && next_leading_ < leading_.size()) {
      out.push_back(leading_[next_leading_++]);
      ++proposed_;
    }
    uint64_t ordinal = 0;
    while (static_cast<int>(out.size()) < max && NextOrdinal(&ordinal)) {
      if (skip_.contains(ordinal)) continue;
      out.push_back(ordinal);
      ++proposed_;
    }
    return out;
  }
  void Observe(uint64_t, const v1::TrialResult&) override {}
  bool Exhausted() const override { return proposed_ >= total_; }
  int64_t planned_total() const override { return total_; }
  bool covers_space() const override { return true; }

 private:
  bool NextOrdinal(uint64_t* ordinal) {
    while (run_ < runs_.size() && offset_ == runs_[run_].count) {
      ++run_;
      offset_ = 0;
    }
    if (run_ == runs_.size()) return false;
    *ordinal = runs_[run_].first + offset_++;
    return true;
  }

  std::vector<OrdinalRun> runs_;
  size_t run_ = 0;       // the walk through runs_: run and offset in it
  uint64_t offset_ = 0;
  int64_t total_;
  int64_t proposed_ = 0;
  std::vector<uint64_t> leading_;             // proposed first, in order
  size_t next_leading_ = 0;
  absl::flat_hash_set<uint64_t> skip_;        // the leading ones: skipped in the walk
};

// The leading configs, then a uniform sample of the other valid configs, up
// to `budget` in all. The sample is drawn over the whole valid space
// (reservoir sampling in one lazy pass, then shuffled) before the leading
// configs are taken out of it, so it does not depend on them: a re-tune
// whose warm start adds the previous winner in front proposes the same
// configs as the first run but for the last ones, and a worker's artifact
// cache serves them. `*whole`: whether the sample is every valid config.
std::vector<uint64_t> SampleValid(ConfigSpace* space, int64_t budget, uint64_t seed,
                                  const std::vector<uint64_t>& leading, bool* whole) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> reservoir;
  ConfigEnumerator enumerator(space);
  OrdinalRun run;
  int64_t seen = 0;
  while (enumerator.NextRun(&run.first, &run.count)) {
    for (uint64_t ordinal = run.first; ordinal != run.first + run.count; ++ordinal) {
      ++seen;
      if (static_cast<int64_t>(reservoir.size()) < budget) {
        reservoir.push_back(ordinal);
      } else if (budget > 0) {
        std::uniform_int_distribution<int64_t> pick(0, seen - 1);
        int64_t j = pick(rng);
        if (j < budget) reservoir[j] = ordinal;
      }
    }
  }
  *whole = seen <= budget;
  std::shuffle(reservoir.begin(), reservoir.end(), rng);
  const absl::flat_hash_set<uint64_t> leads(leading.begin(), leading.end());
  std::vector<uint64_t> out(leading.begin(),
                            leading.begin() + std::min<int64_t>(budget, leading.size()));
  for (uint64_t ordinal : reservoir) {
    if (static_cast<int64_t>(out.size()) >= budget) break;
    if (!leads.contains(ordinal)) out.push_back(ordinal);
  }
  return out;
}

// The default (when valid), then the valid warm-start configs, distinct.
std::vector<uint64_t> Leading(ConfigSpace* space, const StrategyOptions& options) {
  std::vector<uint64_t> leading;
  auto add = [&](uint64_t ordinal) {
    if (ordinal >= space->full_size()) return;
    if (std::find(leading.begin(), leading.end(), ordinal) != leading.end()) return;
    space->Bind(ordinal);
    if (space->Valid()) leading.push_back(ordinal);
  };
  if (options.default_ordinal.has_value()) add(*options.default_ordinal);
  for (uint64_t ordinal : options.warm_start) add(ordinal);
  return leading;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SearchStrategy>> MakeStrategy(
    ConfigSpace* space, const StrategyOptions& options) {
  if (!options.only.empty()) {
    if (static_cast<int64_t>(options.only.size()) > options.max_trials) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the config set has ", options.only.size(), " configs, over the cap of ",
          options.max_trials));
    }
    return std::make_unique<ListStrategy>(options.only, /*covers_space=*/true);
  }
  const std::vector<uint64_t> leading = Leading(space, options);
  if (options.name == "exhaustive" || options.name.empty()) {
    ValidConfigs valid = ValidConfigs::Collect(space, options.max_trials);
    if (valid.count() == 0) {
      return absl::InvalidArgumentError(
          "the config space is empty: no config satisfies every constraint");
    }
    if (valid.truncated()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the space has more than ", options.max_trials,
          " valid configs, over the exhaustive cap; use --strategy random "
          "with a --budget"));
    }
    return std::make_unique<ExhaustiveStrategy>(valid.runs(), static_cast<int64_t>(valid.count()),
                                                leading);
  }
  if (options.name == "random") {
    if (options.budget <= 0) {
      return absl::InvalidArgumentError("random strategy needs a budget > 0");
    }
    if (options.budget > options.max_trials) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "a budget of ", options.budget, " is over the cap of ", options.max_trials,
          " configs per job"));
    }
    bool whole = false;
    std::vector<uint64_t> sample =
        SampleValid(space, options.budget, options.seed, leading, &whole);
    if (sample.empty()) {
      return absl::InvalidArgumentError(
          "the config space is empty: no config satisfies every constraint");
    }
    return std::make_unique<ListStrategy>(std::move(sample), whole);
  }
  if (options.name == "model" || options.name == "evolutionary") {
    if (options.budget <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the ", options.name, " strategy needs a budget > 0"));
    }
    if (options.budget > options.max_trials) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "a budget of ", options.budget, " is over the cap of ", options.max_trials,
          " configs per job"));
    }
    ValidConfigs valid = ValidConfigs::Collect(space, kMaxValidHeld);
    if (valid.count() == 0) {
      return absl::InvalidArgumentError(
          "the config space is empty: no config satisfies every constraint");
    }
    return options.name == "model"
               ? MakeModelStrategy(space, std::move(valid), options.budget, options.seed, leading,
                                   options.history, options.history_shapes)
               : MakeEvolutionaryStrategy(space, std::move(valid), options.budget,
                                          options.seed, leading);
  }
  if (options.name == "coordinate") {
    if (options.budget <= 0) {
      return absl::InvalidArgumentError("the coordinate strategy needs a budget > 0");
    }
    return MakeCoordinateStrategy(space, std::min(options.budget, options.max_trials), leading);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown strategy \"", options.name,
                                                 "\" (", kStrategyNames, ")"));
}

}  // namespace tunefleet::server
