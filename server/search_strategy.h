// Search strategies: which configs of a space a job target measures, proposed
// in batches and told every result. Configs are ordinals of a ConfigSpace.
#ifndef TUNEFLEET_SERVER_SEARCH_STRATEGY_H_
#define TUNEFLEET_SERVER_SEARCH_STRATEGY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config_space.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::server {

// Thread-safety: not thread-safe; the JobManager calls it under its lock.
class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // Up to `max` configs never proposed before; fewer (or none) when the
  // strategy has nothing more now.
  virtual std::vector<uint64_t> Propose(int max) = 0;
  // The result of a proposed config (any status).
  virtual void Observe(uint64_t ordinal, const v1::TrialResult& result) = 0;
  // What was observed of `ordinal` no longer holds: its result came from a
  // principal quarantined since, or a re-measurement by another principal
  // ranks it now. The strategy forgets what it observed of it and learns
  // `trusted` instead, when there is one. Strategies that do not learn
  // ignore it.
  virtual void Amend(uint64_t ordinal, const std::optional<v1::TrialResult>& trusted) {}
  // True when Propose will never return anything again.
  virtual bool Exhausted() const = 0;
  // How many configs the strategy will have proposed in the end.
  virtual int64_t planned_total() const = 0;
  // True when what it proposes in the end is every valid config of the
  // space (or every config of a named set), false when a budget of trials
  // leaves some out: why the search stopped once Exhausted.
  virtual bool covers_space() const = 0;
  // True when it stopped because more configs would not improve the best
  // by its own rule (coordinate: a fixed point), not for a budget.
  virtual bool converged() const { return false; }
  // True when Propose returns nothing until more of what it proposed has a
  // result (coordinate: between groups): the target has no work to lease
  // meanwhile, and what was leased and lost must come back to it.
  virtual bool waiting() const { return false; }
};

// The strategy names MakeStrategy knows, for messages.
inline constexpr char kStrategyNames[] = "exhaustive, random, model, evolutionary or coordinate";

// A config measured for another shape (the fleet's history,
// fleet_history.h), as a config of this space.
struct PriorResult {
  uint64_t ordinal = 0;
  double seconds = 0;  // median, > 0
  int shape = 0;       // times compare only within one shape
};

// Where the history's rows of one shape were measured (PriorResult::shape
// indexes a list of these): the model strategy takes each row's derived
// values, priority and context features at its own shape and device, so
// that it learns how the ranking moves with the shape and the device.
struct PriorShape {
  v1::Shape shape;      // as the kernel's spec normalizes it
  DeviceLimits limits;  // the device's; empty when unknown (the job's are used)
  // Distinct configs measured for the shape: with the job's own count of
  // valid configs, how much of its space the shape's tuning saw (a shape
  // tuned exhaustively is trusted more than one tuned with a small budget).
  int64_t measured = 0;
};

// Configs a random, model or evolutionary search tries when its job's spec
// sets no budget.
inline constexpr int64_t kDefaultTrialBudget = 64;

struct StrategyOptions {
  std::string name = "exhaustive";        // see kStrategyNames
  // random, model, evolutionary: configs to try; coordinate: at most.
  int64_t budget = kDefaultTrialBudget;
  uint64_t seed = 0;
  // Exhaustive: refuse spaces with more valid configs (ResourceExhausted).
  int64_t max_trials = 100000;
  // Measured first when valid, so every job knows the default's time.
  std::optional<uint64_t> default_ordinal;
  // Warm start: measured right after the default, in this order, those that
  // are valid and distinct (the best configs of the nearest tuned shapes);
  // they count against the budget. Ignored with `only`.
  std::vector<uint64_t> warm_start;
  // When set, exactly these configs (a named config set), in order.
  std::vector<uint64_t> only;
  // Model: training rows besides the job's own results (they are not
  // proposals: they neither count against the budget nor mark a config
  // measured). Ignored by the other strategies.
  std::vector<PriorResult> history;
  // Where each shape of `history` was measured, by PriorResult::shape; a
  // row whose shape has no entry counts as measured at the job's own shape
  // and device.
  std::vector<PriorShape> history_shapes;
};

// Builds a strategy over `space` in at most one walk of its valid configs
// (none for a config set). Exhaustive holds the valid configs as runs of
// consecutive ordinals (at most max_trials runs); random holds its sample;
// neither keeps `space`. Model and evolutionary (adaptive_strategy.h) learn
// from results, keep `space` (which must outlive them: the TargetTrials owns
// both) and propose `budget` distinct configs. Coordinate
// (coordinate_strategy.h) searches one group of params at a time from the
// best so far, keeps `space` too, and proposes at most `budget`. Every strategy is
// deterministic for a seed and the same results. InvalidArgument for an
// unknown name or an empty space, ResourceExhausted over `max_trials`.
absl::StatusOr<std::unique_ptr<SearchStrategy>> MakeStrategy(
    ConfigSpace* space, const StrategyOptions& options);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_SEARCH_STRATEGY_H_
