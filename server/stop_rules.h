// The plateau rule of a job target's search: stop proposing once
// `plateau_batches` batches in a row brought no improvement of the best.
//
// A batch is the configs the strategy proposed for one lease (configs handed
// out again after a lost lease stay in their first batch). It closes when
// every one of its configs has a result. A result *improves* when it is OK,
// not cut early, and its median is below the best median known when it
// arrives by more than kMinImprovement of that best (the first OK result
// always improves). A closed batch with an improving result resets the
// count of batches without improvement to 0; any other closed batch adds 1.
// Batches count in the order they close. Results restored after a restart
// belong to no batch: the count starts again from 0.
//
// The time budget is the JobManager's (it owns the clock); both rules end in
// TargetTrials::StopSearch.
#ifndef TUNEFLEET_SERVER_STOP_RULES_H_
#define TUNEFLEET_SERVER_STOP_RULES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace tunefleet::server {

// An improvement must beat the best by more than this fraction of it (1 %:
// above the run-to-run spread of a median on a quiet device,
// docs/measurement.md), so that noise does not keep a search alive.
inline constexpr double kMinImprovement = 0.01;

// Thread-safety: not thread-safe; owned and locked by the TargetTrials'
// owner.
class PlateauRule {
 public:
  // `plateau_batches` <= 0 turns the rule off (the count is still kept).
  explicit PlateauRule(int plateau_batches) : limit_(plateau_batches) {}

  // `ordinals` were proposed as one batch.
  void Proposed(const std::vector<uint64_t>& ordinals);
  // A result of `ordinal` arrived; `seconds` is its median when it is OK and
  // not cut early (nullopt otherwise), `best` the best median before it.
  // Ordinals of no batch (restored) only move the best.
  void Recorded(uint64_t ordinal, std::optional<double> seconds, std::optional<double> best);
  // True once `plateau_batches` closed batches in a row did not improve.
  bool reached() const { return limit_ > 0 && without_improvement_ >= limit_; }
  int batches_without_improvement() const { return without_improvement_; }

  // Whether `seconds` improves on `best` under kMinImprovement.
  static bool Improves(double seconds, std::optional<double> best);

 private:
  struct Batch {
    int64_t open = 0;  // configs without a result yet
    bool improved = false;
  };

  const int limit_;
  int64_t next_batch_ = 0;
  absl::flat_hash_map<int64_t, Batch> batches_;      // open batches
  absl::flat_hash_map<uint64_t, int64_t> batch_of_;  // configs waiting for a result
  int without_improvement_ = 0;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_STOP_RULES_H_
