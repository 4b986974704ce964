#include "server/target_planner.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "common/status_macros.h"
#include "server/best_config_index.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {

TargetPlanner::TargetPlanner(const AdmissionLimits& limits, const FleetHistoryLimits& history,
                             Store* store, WorkerRegistry* workers,
                             const BestConfigIndex* index)
    : limits_(limits), history_(history), store_(store), workers_(workers), index_(index) {}

std::vector<WorkerDevice> TargetPlanner::LiveModelsFor(const v1::JobSpec& spec) const {
  std::vector<WorkerDevice> devices = workers_->LiveModels(spec.kernel().backend());
  if (spec.device_model().empty()) return devices;
  devices.erase(std::remove_if(devices.begin(), devices.end(),
                               [&](const WorkerDevice& d) {
                                 return d.device.model() != spec.device_model();
                               }),
                devices.end());
  return devices;
}

std::vector<JobTarget> TargetPlanner::Plan(const v1::JobSpec& spec,
                                           const std::vector<WorkerDevice>& devices,
                                           absl::Status* first_error) const {
  std::vector<JobTarget> targets;
  // Read once per model, and only for a target the cache does not answer.
  absl::flat_hash_map<std::string, FleetHistoryRows> history_of;
  for (const WorkerDevice& device : devices) {
    const std::string& model = device.device.model();
    auto history = [&]() -> FleetHistoryRows {
      auto it = history_of.find(model);
      if (it == history_of.end()) it = history_of.emplace(model, HistoryFor(spec, model)).first;
      return it->second;
    };
    absl::StatusOr<TargetPlan> plan =
        PlanTarget(limits_, spec, device, store_, WarmStartFor(spec, device), history);
    if (!plan.ok()) {
      if (first_error->ok()) *first_error = plan.status();
      continue;
    }
    JobTarget& target = targets.emplace_back();
    target.info = std::move(plan->info);
    target.trials = std::move(plan->trials);
  }
  return targets;
}

absl::StatusOr<JobTarget> TargetPlanner::Resume(const v1::JobSpec& spec,
                                                const v1::StoredTarget& info,
                                                const std::vector<TrialRecord>& rows) const {
  JobTarget target;
  target.info = info;
  if (info.cached()) return target;
  ASSIGN_OR_RETURN(target.trials,
                   ResumeTarget(limits_, spec, info, HistoryFor(spec, info.device_model())));
  RETURN_IF_ERROR(target.RestoreSearch(rows));
  return target;
}

std::vector<std::string> TargetPlanner::WarmStartFor(const v1::JobSpec& spec,
                                                     const WorkerDevice& device) const {
  std::vector<std::string> configs;
  if (index_ == nullptr || !spec.config_set().empty()) return configs;
  for (const BestConfigAnswer& neighbour :
       index_->Neighbours(spec.kernel().name(), spec.shape(), device.device.model(),
                          device.toolkit, limits_.warm_start)) {
    configs.push_back(neighbour.config_text);
  }
  return configs;
}

FleetHistoryRows TargetPlanner::HistoryFor(const v1::JobSpec& spec,
                                           const std::string& model) const {
  if (index_ == nullptr || spec.strategy() != "model" || !spec.config_set().empty()) return {};
  absl::StatusOr<FleetHistoryRows> history =
      FleetHistory(*index_, store_, spec.kernel().name(), spec.shape(), model, history_);
  if (!history.ok()) {
    // The job still searches, on its own results only.
    spdlog::warn("the fleet's history of kernel {} on {} is not read: {}", spec.kernel().name(),
                 model, history.status().ToString());
    return {};
  }
  return *std::move(history);
}

}  // namespace tunefleet::server
