#include "server/fleet_history.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "common/calibration.h"
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
    // OK and not excluded (ListKeyTrials); a cut trial's time is partial.
    ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, store->ListKeyTrials(row.tuning_key));
    std::vector<size_t> order;
    for (size_t i = 0; i < trials.size(); ++i) {
      if (!trials[i].cut_early && trials[i].median_seconds > 0) order.push_back(i);
    }
    // Newest first (the later inserted of one time first); then one per
    // config, its newest measurement.
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (trials[a].finished_unix_ms != trials[b].finished_unix_ms) {
        return trials[a].finished_unix_ms > trials[b].finished_unix_ms;
      }
      return a > b;
    });
    absl::flat_hash_set<std::string> seen;
    std::vector<size_t> kept;
    for (size_t i : order) {
      if (seen.insert(trials[i].config).second) kept.push_back(i);
    }
    if (kept.empty()) continue;
    const int shape_index = next_shape++;
    for (size_t i : kept) {
      if (out.size() >= limits.rows) break;
      out.push_back(FleetTrial{
          trials[i].config,
          CalibratedTime(trials[i].median_seconds, trials[i].calibration_seconds), shape_index});
    }
  }
  return out;
}

}  // namespace tunefleet::server
