#include "server/fleet_history.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/calibration.h"
#include "common/status_macros.h"
#include "tunefleet/v1/job_record.pb.h"

namespace tunefleet::server {
namespace {

// The device limits that the job `job_id` recorded for `device_model`;
// empty when its record cannot be read or does not say.
DeviceLimits RecordedLimits(Store* store, const std::string& job_id,
                            const std::string& device_model) {
  absl::StatusOr<JobRecord> job = store->GetJob(job_id);
  v1::StoredJob stored;
  if (!job.ok() || !stored.ParseFromString(job->targets)) return {};
  for (const v1::StoredTarget& target : stored.targets()) {
    if (target.device_model() != device_model) continue;
    v1::Device device;
    *device.mutable_limits() = target.limits();
    return LimitsFromDevice(device);
  }
  return {};
}

// The served rows whose trials the history reads, in the policy's order.
std::vector<BestConfigAnswer> ShapesToRead(const BestConfigIndex& index,
                                           const std::string& kernel_name,
                                           const v1::Shape& shape,
                                           const std::string& device_model,
                                           const FleetHistoryLimits& limits) {
  std::vector<BestConfigAnswer> rows =
      index.TunedRows(kernel_name, shape, device_model, limits.shapes, limits.max_distance);
  if (!rows.empty()) return rows;
  std::vector<std::string> models = index.DeviceModels();  // sorted
  const std::string family = ArchitectureFamily(device_model);
  std::stable_partition(models.begin(), models.end(), [&](const std::string& model) {
    return !family.empty() && ArchitectureFamily(model) == family;
  });
  for (const std::string& model : models) {
    if (model == device_model || rows.size() >= limits.shapes) continue;
    for (BestConfigAnswer& row : index.TunedRows(kernel_name, shape, model,
                                                 limits.shapes - rows.size(),
                                                 limits.max_distance)) {
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace

absl::StatusOr<FleetHistoryRows> FleetHistory(const BestConfigIndex& index, Store* store,
                                              const std::string& kernel_name,
                                              const v1::Shape& shape,
                                              const std::string& device_model,
                                              const FleetHistoryLimits& limits) {
  FleetHistoryRows out;
  if (limits.shapes == 0 || limits.rows == 0) return out;
  // Each (job, model)'s recorded limits, read once: a sweep tunes many of
  // the shapes read in one job.
  absl::flat_hash_map<std::pair<std::string, std::string>, DeviceLimits> recorded;
  for (const BestConfigAnswer& row :
       ShapesToRead(index, kernel_name, shape, device_model, limits)) {
    if (out.trials.size() >= limits.rows) break;
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
    const int shape_index = static_cast<int>(out.shapes.size());
    auto [limits_of, unread] = recorded.try_emplace({row.job_id, row.device_model});
    if (unread) limits_of->second = RecordedLimits(store, row.job_id, row.device_model);
    out.shapes.push_back(FleetShape{row.tuned_shape, row.device_model, limits_of->second,
                                    static_cast<int64_t>(kept.size())});
    for (size_t i : kept) {
      if (out.trials.size() >= limits.rows) break;
      out.trials.push_back(FleetTrial{
          trials[i].config,
          CalibratedTime(trials[i].median_seconds, trials[i].calibration_seconds), shape_index});
    }
  }
  return out;
}

}  // namespace tunefleet::server
