#include "server/fleet_history.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "common/status_macros.h"

namespace tunefleet::server {

absl::StatusOr<std::vector<FleetTrial>> FleetHistory(const BestConfigIndex& index, Store* store,
                                                     const std::string& kernel_name,
                                                     const v1::Shape& shape,
                                                     const std::string& device_model,
                                                     const FleetHistoryLimits& limits) {
  std::vector<FleetTrial> out;
  if (limits.shapes == 0 || limits.rows == 0) return out;
  int next_shape = 0;
  for (const BestConfigAnswer& row :
       index.TunedRows(kernel_name, shape, device_model, limits.shapes, limits.max_distance)) {
    if (out.size() >= limits.rows) break;
    ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store->ListKeyTrials(row.tuning_key));
    // One per config, the newest measurement (insertion order breaks ties).
    absl::flat_hash_map<std::string, size_t> newest;
    for (size_t i = 0; i < trials.size(); ++i) {
      const TrialRecord& trial = trials[i];
      if (trial.status != v1::TRIAL_STATUS_OK || trial.excluded || trial.cut_early ||
          !(trial.median_seconds > 0)) {
        continue;
      }
      auto [it, inserted] = newest.emplace(trial.config, i);
      if (!inserted && trials[it->second].finished_unix_ms <= trial.finished_unix_ms) {
        it->second = i;
      }
    }
    std::vector<size_t> kept;
    for (const auto& [config, i] : newest) kept.push_back(i);
    std::sort(kept.begin(), kept.end(), [&](size_t a, size_t b) {
      if (trials[a].finished_unix_ms != trials[b].finished_unix_ms) {
        return trials[a].finished_unix_ms > trials[b].finished_unix_ms;
      }
      return a > b;
    });
    if (kept.empty()) continue;
    const int shape_index = next_shape++;
    for (size_t i : kept) {
      if (out.size() >= limits.rows) break;
      out.push_back(FleetTrial{trials[i].config, trials[i].median_seconds, shape_index});
    }
  }
  return out;
}

}  // namespace tunefleet::server
