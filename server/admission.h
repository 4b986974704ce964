// Admission: whether a submitted job can be run, and the plan of each of its
// targets (one per device model and toolkit): the tuning key, and either the
// stored answer or the trials to measure. Pure functions of their inputs and
// the store's best rows; no lock, no state.
#ifndef TUNEFLEET_SERVER_ADMISSION_H_
#define TUNEFLEET_SERVER_ADMISSION_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/fleet_history.h"
#include "server/store/store.h"
#include "server/target_trials.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/job_record.pb.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

// The caps a job must fit in, and how its targets measure.
struct AdmissionLimits {
  int64_t max_space_points = 10'000'000;
  int64_t max_trials = 100'000;
  int64_t max_source_bytes = 4 << 20;
  int64_t max_tensor_bytes = int64_t{16} << 30;
  int max_lease_attempts = 3;
  int finalists = 5;
  // Best configs of the nearest tuned shapes measured first (0: none).
  size_t warm_start = 8;
};

// Checks `spec` and normalizes it in place: source digests (set, or checked
// when given), the shape (every dim, spec order). Hostile fields are refused
// first (see job_input.h), and the job's tensors under the default config
// must fit `max_tensor_bytes`. When `walk_space`, the
// strategy is also built once under placeholder limits, so that a space
// with no valid config is refused before any device is known.
// InvalidArgument naming the field, ResourceExhausted over a cap.
absl::Status ValidateSpec(const AdmissionLimits& limits, bool walk_space,
                          v1::JobSpec* spec);

// One target of a job.
struct TargetPlan {
  v1::StoredTarget info;
  std::unique_ptr<TargetTrials> trials;  // null when answered from the store
};

// The target of `spec` on `device`'s model. With a non-null `cache` and
// without force_retune (or replace_best), a tuned key is answered from the
// store; with force_retune alone, the key's served best is the target's
// defender (StoredTarget.defender, TargetTrials::Defend). Walks the config space once. Errors name the model; the store's errors pass through.
// REQUIRES: `spec` passed ValidateSpec.
// `warm_start`: short-form configs to measure right after the default (the
// best configs of the nearest tuned shapes, BestConfigIndex::Neighbours);
// those that do not parse or are invalid here are dropped. They are kept in
// the plan's info, so that a resumed target proposes the same.
// `history` gives the fleet's trials of other shapes (fleet_history.h),
// training rows of the model strategy; called only when the target is not
// answered from the cache. Those whose config is not one of this space's are
// dropped. Not kept: a resumed target is given the history anew.
absl::StatusOr<TargetPlan> PlanTarget(
    const AdmissionLimits& limits, const v1::JobSpec& spec, const WorkerDevice& device,
    Store* cache, const std::vector<std::string>& warm_start = {},
    const std::function<FleetHistoryRows()>& history = nullptr);

// The trials of a target that was planned before a restart.
// REQUIRES: `spec` passed ValidateSpec; `target` is not cached.
absl::StatusOr<std::unique_ptr<TargetTrials>> ResumeTarget(
    const AdmissionLimits& limits, const v1::JobSpec& spec,
    const v1::StoredTarget& target, const FleetHistoryRows& history = {});

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_ADMISSION_H_
