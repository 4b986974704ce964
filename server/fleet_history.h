// The fleet's history that the model strategy trains on besides a job's own
// results: the measured trials of other tuned shapes of the same kernel, on
// the same device model or, for a model the fleet has not tuned near the
// shape, on its other models. The policy is stated here and enforced in
// FleetHistory alone:
//
//  - which shapes: the served best rows of the kernel on the job target's
//    device model (any toolkit), that is rows tuned with the kernel's newest
//    code and measurement protocol (BestConfigIndex::TunedRows), nearest
//    shape first, at most `limits.shapes` of them; the job's own shape counts
//    too when it was tuned before (a retune); shapes farther than
//    `limits.max_distance` (TunedShapes' distance: the sum over dims of
//    |ln(a / b)|) are not read, as their best configs differ too often
//    (a decode GEMM, M=16, against square ones): by default a factor of 16
//    in all, e.g. one dim 4 times and another 4 times;
//  - another device model's shapes: only when the job's model has no such
//    row (a model the fleet never tuned near the shape), the same rule over
//    the kernel's other models, those of the job model's architecture
//    family (ArchitectureFamily: sm_90 with sm_90) first, then the others,
//    each group by model name, each model's shapes nearest first, until
//    `limits.shapes`;
//  - which trials of a shape: the OK, not excluded, not cut-early trials of
//    its tuning key (every job and round: Store::ListKeyTrials), one per
//    config (the newest measurement of it), newest first;
//  - how many: at most `limits.rows` in all, filled shape by shape in the
//    order above (so the nearest shapes' newest trials are kept);
//  - where each shape was measured: its shape, device model, the device's
//    limits as the job that tuned its best recorded them (Store::GetJob),
//    and how many distinct configs it measured, so that the cost model
//    takes each row's features at its own shape and device and trusts a
//    shape by how much of its space was measured.
//
// Why every trial and not only the best rows: a cost model learns which
// configs are slow as much as which are fast, and the best row of a shape
// is one point. Times are not comparable across shapes, so each trial keeps
// the index of its shape and the model compares times only within a shape
// (model_strategy.cc: log-time relative to the shape's fastest).
//
// Reads the store (one query per shape, and one per job whose limits it
// reads): call it without holding a lock.
#ifndef TUNEFLEET_SERVER_FLEET_HISTORY_H_
#define TUNEFLEET_SERVER_FLEET_HISTORY_H_

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config_space.h"
#include "server/best_config_index.h"
#include "server/store/store.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::server {

struct FleetHistoryLimits {
  size_t shapes = 8;  // tuned shapes read, nearest first (0: no history)
  size_t rows = 512;  // trials kept in all
  double max_distance = std::log(16.0);  // shapes farther are not read
};

// A tuned shape the history read: where its trials were measured.
struct FleetShape {
  v1::Shape shape;           // the best row's shape, as stored
  std::string device_model;
  DeviceLimits limits;       // empty when its job's record does not say
  int64_t measured = 0;      // distinct configs measured for it
};

// One measured config of another tuned shape.
struct FleetTrial {
  std::string config;     // short form, as stored
  // Its calibrated time (common/calibration.h): only times of one shape are
  // compared with each other.
  double median_seconds = 0;
  int shape = 0;          // its FleetShape: 0 for the first shape read, 1 for the next, ...
};

struct FleetHistoryRows {
  std::vector<FleetShape> shapes;  // by FleetTrial::shape
  std::vector<FleetTrial> trials;
};

// The history of `kernel_name` for a job tuning `shape` on `device_model`,
// under the policy above. Empty when the kernel is unknown, the shape does
// not normalize or nothing near was tuned. The store's errors pass through,
// but for a job record that cannot be read, whose shape's limits stay empty.
absl::StatusOr<FleetHistoryRows> FleetHistory(const BestConfigIndex& index, Store* store,
                                                     const std::string& kernel_name,
                                                     const v1::Shape& shape,
                                                     const std::string& device_model,
                                                     const FleetHistoryLimits& limits);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_FLEET_HISTORY_H_
