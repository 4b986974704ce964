// A learned cost model: gradient-boosted trees (XGBoost, through its C API)
// fitted to configs' features and their measured log-times, asked to rank
// configs not measured yet. The only file that sees XGBoost.
//
// Deterministic for a seed: one thread, exact tree method.
//
// Thread-safety: not thread-safe.
#ifndef TUNEFLEET_SERVER_COST_MODEL_H_
#define TUNEFLEET_SERVER_COST_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tunefleet::server {

struct CostModelOptions {
  int rounds = 40;     // boosting rounds per fit
  int max_depth = 6;
  double eta = 0.3;    // learning rate
  uint64_t seed = 0;
};

class CostModel {
 public:
  explicit CostModel(CostModelOptions options) : options_(options) {}
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Fits a new model to `rows` (row-major, `features` columns; NaN is
  // missing) and their `targets`, each row counting `weights[i]` times (all
  // once when `weights` is empty), replacing the previous model.
  // InvalidArgument when the sizes disagree or there are no rows; Internal
  // with XGBoost's message when it fails.
  absl::Status Fit(const std::vector<float>& rows, int features,
                   const std::vector<float>& targets, const std::vector<float>& weights = {});
  // One prediction per row. FailedPrecondition before a successful Fit.
  absl::StatusOr<std::vector<float>> Predict(const std::vector<float>& rows, int features) const;
  bool fitted() const { return booster_ != nullptr; }

 private:
  void Release();

  const CostModelOptions options_;
  void* booster_ = nullptr;  // BoosterHandle
  int features_ = 0;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_COST_MODEL_H_
