#include "server/stop_rules.h"

namespace tunefleet::server {

bool PlateauRule::Improves(double seconds, std::optional<double> best) {
  return !best.has_value() || seconds < *best * (1 - kMinImprovement);
}

void PlateauRule::Proposed(const std::vector<uint64_t>& ordinals) {
  if (ordinals.empty()) return;
  const int64_t id = next_batch_++;
  Batch& batch = batches_[id];
  for (uint64_t ordinal : ordinals) {
    if (batch_of_.emplace(ordinal, id).second) ++batch.open;
  }
  if (batch.open == 0) batches_.erase(id);
}

void PlateauRule::Recorded(uint64_t ordinal, std::optional<double> seconds,
                           std::optional<double> best) {
  auto it = batch_of_.find(ordinal);
  if (it == batch_of_.end()) return;
  const int64_t id = it->second;
  batch_of_.erase(it);
  Batch& batch = batches_.at(id);
  if (seconds.has_value() && Improves(*seconds, best)) batch.improved = true;
  if (--batch.open > 0) return;
  without_improvement_ = batch.improved ? 0 : without_improvement_ + 1;
  batches_.erase(id);
}

}  // namespace tunefleet::server
