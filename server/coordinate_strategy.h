// The coordinate strategy: a search over groups of params, one group at a
// time, the others held at the best config found so far. It is how a
// function of several kernels is tuned in its context (docs/python.md,
// "Tuning a function of several kernels"): each kernel's params are a group,
// and the whole function is the timed unit.
#ifndef TUNEFLEET_SERVER_COORDINATE_STRATEGY_H_
#define TUNEFLEET_SERVER_COORDINATE_STRATEGY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config_space.h"
#include "server/search_strategy.h"

namespace tunefleet::server {

// Separates a param's group from its name: "qk__BLOCK_M" is BLOCK_M of the
// group qk. A param without it (or starting with it) is a group of its own.
inline constexpr char kGroupSeparator[] = "__";
// The most combinations of values one group may have.
inline constexpr int64_t kMaxGroupConfigs = 4096;
// Configs measured at a time while no config has passed.
inline constexpr int kWalkBatch = 8;

// The group of each param of `spec`, in spec order (an index into the
// groups in order of first appearance), and the groups' names.
struct ParamGroups {
  std::vector<int> group_of_param;
  std::vector<std::string> names;
};
ParamGroups GroupParams(const v1::KernelSpec& spec);

// The rule, for one target:
//   1. The leading configs (the default, the warm start) are measured first;
//      the fastest of them that passed is the incumbent. Without one, valid
//      configs are measured in ordinal order, kWalkBatch at a time, until one
//      passes (the search ends after kDefaultTrialBudget of them fail).
//   2. Then the groups, in order of first appearance, round after round:
//      every valid config that differs from the incumbent in the group's
//      params alone and was not measured yet is proposed; once all of them
//      have a result, the incumbent is the fastest config measured so far
//      (an OK result not cut early, by calibrated time; a config replaces
//      the fastest only when faster by more than kMinImprovement, so that
//      noise does not move the incumbent).
//   3. The search ends once every group has been searched from the current
//      incumbent without moving it (a fixed point of the rule: converged()),
//      or once `budget` configs were proposed.
// Proposing waits for a group's results: between groups Propose returns
// nothing (waiting()) until the last result of the group is observed.
// Results of configs it never proposed (restored trials) are used like its
// own and count against the budget.
// Thread-safety: not thread-safe (the JobManager calls it under its lock).
// Keeps `space`, which must outlive it (the TargetTrials owns both).
// InvalidArgument when no config of the space is valid; ResourceExhausted
// when a group has more than kMaxGroupConfigs combinations of values.
// Cost: a group's phase binds and checks each of its combinations once,
// under the JobManager's lock (at most kMaxGroupConfigs: a few ms with many
// constraints).
absl::StatusOr<std::unique_ptr<SearchStrategy>> MakeCoordinateStrategy(
    ConfigSpace* space, int64_t budget, std::vector<uint64_t> leading);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_COORDINATE_STRATEGY_H_
