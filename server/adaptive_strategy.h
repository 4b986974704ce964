// The base of the strategies that learn from results (model, evolutionary):
// a budget of distinct valid configs, the leading ones (the default, the warm
// start) first, never a config twice
// (proposed, or observed from a restored trial), and every result kept. The
// subclass only chooses the next configs from what was observed.
//
// Proposing never waits for results: a strategy that has learned nothing yet
// samples the valid configs uniformly, so a lease is always filled while the
// budget lasts.
#ifndef TUNEFLEET_SERVER_ADAPTIVE_STRATEGY_H_
#define TUNEFLEET_SERVER_ADAPTIVE_STRATEGY_H_

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/config_space.h"
#include "server/pair_coverage.h"
#include "server/search_strategy.h"
#include "server/valid_configs.h"

namespace tunefleet::server {

// Thread-safety: not thread-safe (the JobManager calls it under its lock).
// Keeps `space`, which must outlive it (the TargetTrials owns both).
class AdaptiveStrategy : public SearchStrategy {
 public:
  std::vector<uint64_t> Propose(int max) final;
  void Observe(uint64_t ordinal, const v1::TrialResult& result) final;
  void Amend(uint64_t ordinal, const std::optional<v1::TrialResult>& trusted) final;
  bool Exhausted() const final { return proposed_ >= total_; }
  int64_t planned_total() const final { return total_; }
  bool covers_space() const final { return covers_space_; }

 protected:
  struct Observation {
    uint64_t ordinal = 0;
    bool ok = false;
    double seconds = 0;  // median, when ok
  };

  // `valid`: the space's valid configs (truncated when there are too many to
  // hold: then configs are drawn by rejection from the full space).
  // `leading`: valid distinct configs to propose first, in order.
  AdaptiveStrategy(ConfigSpace* space, ValidConfigs valid, int64_t budget, uint64_t seed,
                   std::vector<uint64_t> leading);

  // Up to `max` configs to propose now, best first. Configs already used
  // (see Used) or invalid are skipped by the caller, which then asks again.
  virtual std::vector<uint64_t> Choose(int max) = 0;
  // A new observation was added to observations().
  virtual void Learned() {}
  // An observation was replaced or removed (Amend).
  virtual void Relearn() {}

  bool Used(uint64_t ordinal) const { return used_.contains(ordinal); }
  // Binds the space: the config satisfies every constraint.
  bool IsValid(uint64_t ordinal);
  // A uniformly drawn valid config not used yet; nullopt when none is found
  // (the space is used up, or rejection sampling failed).
  std::optional<uint64_t> RandomUnused();
  // A spread-out draw: of kSpreadDraws uniform draws (RandomUnused), the one
  // whose param values form the most pairs that no used config and none of
  // `also` has (PairCoverage); the first drawn among equals. nullopt as
  // RandomUnused.
  std::optional<uint64_t> SpreadUnused(const std::vector<uint64_t>& also);
  // The OK observations, fastest first, at most `n`.
  std::vector<Observation> Fastest(size_t n) const;

  const std::vector<Observation>& observations() const { return observations_; }
  ConfigSpace* space() { return space_; }
  const ValidConfigs& valid() const { return valid_; }
  const ConfigDigits& digits() const { return digits_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  void Use(uint64_t ordinal);

  ConfigSpace* space_;
  const ValidConfigs valid_;
  const ConfigDigits digits_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> leading_;  // the default and the warm start, proposed first
  size_t next_leading_ = 0;
  int64_t total_;
  bool covers_space_;  // total_ is every valid config
  int64_t proposed_ = 0;
  absl::flat_hash_set<uint64_t> used_;
  PairCoverage coverage_;  // of used_
  std::vector<Observation> observations_;
};

// A genetic algorithm over the valid configs: a population of the fastest
// results, parents by tournament, uniform crossover of param values, and
// mutations that move a param to a neighbouring value (or, less often, any
// value); children that break a constraint or were measured are discarded.
std::unique_ptr<SearchStrategy> MakeEvolutionaryStrategy(ConfigSpace* space, ValidConfigs valid,
                                                         int64_t budget, uint64_t seed,
                                                         std::vector<uint64_t> leading);

// A learned cost model (cost_model.h) over each config's param values,
// derived values and the spec's priority, fitted to log-times relative to the
// fastest of their shape: the job's own results (relative to its fastest so
// far; failures count as twice its slowest time) and `history`, the fleet's
// trials of other shapes of the same kernel (fleet_history.h; each shape
// relative to its own fastest; rows whose config is invalid here are
// dropped). A history row's derived values and priority are evaluated at the
// shape and device it was measured at (`history_shapes`, by
// PriorResult::shape; the job's own where it has no entry), and with a
// history every row has context features (log2 of each problem dim, then
// every device limit of the job's space, NaN where a history device lacks
// it) and one more telling the job's rows (1) from the history's (0); a
// history shape's rows weigh max(0.25, sqrt(its measured configs / this
// space's valid configs)). It is refitted whenever the job's results grew
// by a fifth (at least 8) since the last fit. It ranks a candidate pool
// (every unused valid config when there are at most 4096, else a uniform
// sample of 2048 plus every single-param neighbour of the 8 fastest of the
// job and the 8 fastest of the history) by predicted time; of each batch's
// picks one in five is a spread-out draw (SpreadUnused) for exploration, and
// of the rest, once there are 16 results, every other is the best-predicted
// single-param neighbour of the 2 fastest results (a local search), the
// others the best-predicted of the pool. It fits once it has 8 OK results, the history's counting unless the
// spec has a priority; until then it makes spread-out draws, or, when the
// spec has a priority,
// proposes the highest-priority configs of that pool after a coordinate
// ascent on the priority from the 8 best of it.
std::unique_ptr<SearchStrategy> MakeModelStrategy(ConfigSpace* space, ValidConfigs valid,
                                                  int64_t budget, uint64_t seed,
                                                  std::vector<uint64_t> leading,
                                                  std::vector<PriorResult> history = {},
                                                  std::vector<PriorShape> history_shapes = {});

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_ADAPTIVE_STRATEGY_H_
