#include "tests/server/best_config_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "common/config_space.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "common/tuning_key.h"

namespace tunefleet::server {
namespace {

// Sum over dims of |log(a / b)|: shapes that differ by the same factor in
// any dimension are equally near.
double ShapeDistance(const v1::Shape& a, const v1::Shape& b) {
  double distance = 0;
  for (const v1::DimValue& dim : a.dims()) {
    std::optional<int64_t> other = FindDim(b, dim.name());
    if (!other.has_value() || *other <= 0) return std::numeric_limits<double>::infinity();
    distance += std::abs(std::log(static_cast<double>(dim.value()) / *other));
  }
  return distance;
}

bool KeyIsCurrent(const v1::JobSpec& latest, const BestRecord& row,
                  const v1::Shape& row_shape) {
  std::vector<v1::SourceFile> sources(latest.sources().begin(), latest.sources().end());
  return ComputeTuningKey({&latest.kernel(), &sources, row_shape, row.device_model,
                           row.toolkit}) == row.tuning_key;
}

absl::StatusOr<BestConfigAnswer> Answer(const BestRecord& row, const v1::Shape& row_shape,
                                        BestConfigAnswer::Source source) {
  BestConfigAnswer answer;
  answer.source = source;
  ASSIGN_OR_RETURN(answer.config, ParseConfig(row.config));
  answer.config_text = row.config;
  answer.median_seconds = row.median_seconds;
  answer.tuning_key = row.tuning_key;
  answer.job_id = row.job_id;
  answer.tuned_shape = row_shape;
  answer.device_model = row.device_model;
  answer.toolkit = row.toolkit;
  return answer;
}

// Whether `row`'s config is valid at the asked shape: every constraint of
// the space (compiled at that shape, placeholder limits) holds.
bool ValidAt(ConfigSpace* space, const BestRecord& row) {
  absl::StatusOr<v1::Config> config = ParseConfig(row.config);
  if (!config.ok()) return false;
  absl::StatusOr<v1::Config> normalized = NormalizeConfig(space->spec(), *config);
  return normalized.ok() && space->Bind(*normalized).ok() && space->Valid();
}

}  // namespace

absl::StatusOr<BestConfigAnswer> ReferenceBestConfig(
    Store* store, const v1::JobSpec& latest,
    const v1::GetBestConfigRequest& request) {
  ASSIGN_OR_RETURN(v1::Shape shape, NormalizeShape(latest.kernel(), request.shape()));
  ASSIGN_OR_RETURN(std::vector<BestRecord> rows,
                   store->ListBest(request.kernel_name(), request.device_model(),
                                   request.toolkit()));
  // (distance, key, row, its shape) of every served row, nearest first.
  std::vector<std::tuple<double, std::string, const BestRecord*, v1::Shape>> near;
  for (const BestRecord& row : rows) {
    absl::StatusOr<v1::Shape> row_shape = ParseShape(row.shape);
    if (!row_shape.ok() || !KeyIsCurrent(latest, row, *row_shape)) continue;
    const double distance = ShapeDistance(shape, *row_shape);
    if (distance == 0) return Answer(row, *row_shape, BestConfigAnswer::Source::kExact);
    if (distance != std::numeric_limits<double>::infinity()) {
      near.emplace_back(distance, row.tuning_key, &row, *row_shape);
    }
  }
  std::sort(near.begin(), near.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  if (!near.empty()) {
    ASSIGN_OR_RETURN(std::unique_ptr<ConfigSpace> space,
                     ConfigSpace::Create(latest.kernel(), shape,
                                         PlaceholderLimits(latest.kernel().backend())));
    for (const auto& [distance, key, row, row_shape] : near) {
      if (ValidAt(space.get(), *row)) {
        return Answer(*row, row_shape, BestConfigAnswer::Source::kNearestShape);
      }
    }
  }
  BestConfigAnswer answer;
  answer.source = BestConfigAnswer::Source::kDefault;
  ASSIGN_OR_RETURN(v1::Config config, ParseConfig(latest.kernel().default_config()));
  ASSIGN_OR_RETURN(answer.config, NormalizeConfig(latest.kernel(), config));
  answer.config_text = ConfigToString(answer.config);
  answer.device_model = request.device_model();
  answer.toolkit = request.toolkit();
  return answer;
}

}  // namespace tunefleet::server
