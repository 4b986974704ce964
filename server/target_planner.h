// TargetPlanner: binds a job to device models. For a spec and the live device
// models (with toolkits) it may run on, it plans one JobTarget each: the
// stored answer, or the trials to measure, warm-started from the best configs
// of the nearest tuned shapes and, for the model strategy, trained on the
// fleet's history of the kernel on that model. It also rebuilds the targets of
// a job planned before a restart. No lock and no state of its own: it reads
// the registry, the best-config index and the store.
#ifndef TUNEFLEET_SERVER_TARGET_PLANNER_H_
#define TUNEFLEET_SERVER_TARGET_PLANNER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/admission.h"
#include "server/fleet_history.h"
#include "server/store/store.h"
#include "server/tuning_job.h"
#include "server/worker_registry.h"
#include "tunefleet/v1/tuning_service.pb.h"

namespace tunefleet::server {

class BestConfigIndex;

class TargetPlanner {
 public:
  // `index` may be null: no warm start, no fleet history. Everything given
  // must outlive the planner.
  TargetPlanner(const AdmissionLimits& limits, const FleetHistoryLimits& history, Store* store,
                WorkerRegistry* workers, const BestConfigIndex* index);

  const AdmissionLimits& limits() const { return limits_; }

  // The live device models (with toolkits) of `spec`'s backend, only those
  // of spec.device_model when it names one.
  std::vector<WorkerDevice> LiveModelsFor(const v1::JobSpec& spec) const;

  // One target of `spec` on each of `devices` (PlanTarget). A model without
  // a valid config is left out, and the first such error is kept in
  // `*first_error` (when it is still OK): others may run the job.
  // REQUIRES: `spec` passed ValidateSpec.
  std::vector<JobTarget> Plan(const v1::JobSpec& spec, const std::vector<WorkerDevice>& devices,
                              absl::Status* first_error) const;

  // The target `info` of a job planned before a restart, with its stored
  // search-round rows among `rows` put back (JobTarget::RestoreSearch).
  // REQUIRES: `spec` passed ValidateSpec.
  absl::StatusOr<JobTarget> Resume(const v1::JobSpec& spec, const v1::StoredTarget& info,
                                   const std::vector<TrialRecord>& rows) const;

 private:
  // The configs a new target of `spec` on `device` measures first.
  std::vector<std::string> WarmStartFor(const v1::JobSpec& spec,
                                        const WorkerDevice& device) const;
  // The model strategy's training rows for a target of `spec` on `model`;
  // empty for other strategies, and (logged) when the store fails.
  FleetHistoryRows HistoryFor(const v1::JobSpec& spec, const std::string& model) const;

  const AdmissionLimits limits_;
  const FleetHistoryLimits history_;
  Store* const store_;
  WorkerRegistry* const workers_;
  const BestConfigIndex* const index_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_TARGET_PLANNER_H_
