#include "bench/search_replay.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "server/search_strategy.h"

namespace tunefleet::bench {
namespace {

std::optional<uint64_t> DefaultOrdinal(const Loaded& loaded) {
  absl::StatusOr<uint64_t> ordinal =
      OrdinalOfShortForm(*loaded.space, loaded.spec.default_config());
  return ordinal.ok() ? std::optional<uint64_t>(*ordinal) : std::nullopt;
}

// Keeps of each param the values some row of the dataset has, so that the
// replayed space is the one that was measured: a value the spec gained
// after the dataset was measured (a new code path, say) is not in it, and a
// param it gained keeps its first value alone, which every row gets (the
// spec's new params start with the value that is the old behaviour).
absl::Status KeepMeasuredValues(SearchDataset* data, v1::KernelSpec* spec) {
  std::map<std::string, std::set<int64_t>> seen;
  for (const DatasetRow& row : data->rows) {
    ASSIGN_OR_RETURN(v1::Config config, ParseConfig(row.config));
    for (const v1::ParamValue& value : config.values()) seen[value.name()].insert(value.value());
  }
  for (v1::Parameter& param : *spec->mutable_params()) {
    auto it = seen.find(param.name());
    if (it == seen.end()) {
      if (param.values().empty()) continue;
      param.mutable_values()->Truncate(1);
      for (DatasetRow& row : data->rows) {
        absl::StrAppend(&row.config, ",", param.name(), "=", param.values(0));
      }
      continue;
    }
    std::vector<int64_t> kept;
    for (int64_t value : param.values()) {
      if (it->second.contains(value)) kept.push_back(value);
    }
    param.mutable_values()->Assign(kept.begin(), kept.end());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Loaded> LoadDataset(const std::string& path, const std::string& source_dir) {
  Loaded loaded;
  ASSIGN_OR_RETURN(loaded.data, ReadDataset(path));
  std::string dir = loaded.data.kernel_dir;
  if (!std::filesystem::path(dir).is_absolute()) dir = source_dir + "/" + dir;
  ASSIGN_OR_RETURN(KernelBundle bundle, LoadKernelDir(dir));
  loaded.spec = bundle.spec;
  RETURN_IF_ERROR(KeepMeasuredValues(&loaded.data, &loaded.spec));
  ASSIGN_OR_RETURN(v1::Shape parsed, ParseShape(loaded.data.shape));
  ASSIGN_OR_RETURN(v1::Shape shape, NormalizeShape(loaded.spec, parsed));
  DeviceLimits limits = PlaceholderLimits(loaded.spec.backend());
  for (const auto& [name, value] : loaded.data.limits) limits[name] = value;
  ASSIGN_OR_RETURN(loaded.space, ConfigSpace::Create(loaded.spec, shape, limits));
  loaded.optimum = HUGE_VAL;
  for (const DatasetRow& row : loaded.data.rows) {
    ASSIGN_OR_RETURN(uint64_t ordinal, OrdinalOfShortForm(*loaded.space, row.config));
    loaded.by_ordinal[ordinal] = &row;
    if (row.status == v1::TRIAL_STATUS_OK && row.median_seconds < loaded.optimum) {
      loaded.optimum = row.median_seconds;
      loaded.optimum_config = ConfigToString(loaded.space->ConfigAt(ordinal));
    }
  }
  ConfigEnumerator enumerator(loaded.space.get());
  uint64_t ordinal = 0;
  while (enumerator.Next(&ordinal)) ++loaded.valid;
  loaded.default_ordinal = DefaultOrdinal(loaded);
  return loaded;
}

v1::TrialResult ResultOf(const Loaded& loaded, uint64_t ordinal) {
  v1::TrialResult result;
  auto it = loaded.by_ordinal.find(ordinal);
  if (it == loaded.by_ordinal.end()) {
    result.set_status(v1::TRIAL_STATUS_INVALID_CONFIG);
    return result;
  }
  result.set_status(it->second->status);
  result.mutable_measurement()->set_median_seconds(it->second->median_seconds);
  return result;
}

absl::Status ReplayStrategy(const Loaded& loaded, const std::string& strategy_name,
                            uint64_t seed, int batch, const ReplayStart& start,
                            const ReplayObserver& observer) {
  const int64_t space = static_cast<int64_t>(loaded.by_ordinal.size());
  server::StrategyOptions options;
  options.name = strategy_name;
  options.budget = std::max<int64_t>(space, 1);
  options.max_trials = std::max<int64_t>(std::max(space, loaded.valid), 1);
  options.seed = seed;
  options.default_ordinal = loaded.default_ordinal;
  options.warm_start = start.warm_start;
  options.history = start.history;
  options.history_shapes = start.history_shapes;
  ASSIGN_OR_RETURN(std::unique_ptr<server::SearchStrategy> strategy,
                   server::MakeStrategy(loaded.space.get(), options));
  while (!strategy->Exhausted()) {
    std::vector<uint64_t> proposed = strategy->Propose(batch);
    if (proposed.empty()) break;
    for (uint64_t ordinal : proposed) {
      const v1::TrialResult result = ResultOf(loaded, ordinal);
      strategy->Observe(ordinal, result);
      if (!observer(ordinal, result)) return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ReplayOutcome> ReplayToEnd(const Loaded& loaded, const std::string& strategy_name,
                                          uint64_t seed, int batch) {
  ReplayOutcome outcome;
  std::optional<uint64_t> best;
  auto observe = [&](uint64_t ordinal, const v1::TrialResult& result) {
    ++outcome.evaluations;
    if (result.status() != v1::TRIAL_STATUS_OK) return true;
    const double seconds = result.measurement().median_seconds();
    if (!best.has_value() || seconds < outcome.best_seconds) {
      best = ordinal;
      outcome.best_seconds = seconds;
    }
    if (outcome.evaluations_to_optimum < 0 && seconds <= loaded.optimum) {
      outcome.evaluations_to_optimum = outcome.evaluations;
    }
    return true;
  };
  RETURN_IF_ERROR(ReplayStrategy(loaded, strategy_name, seed, batch, ReplayStart{}, observe));
  if (best.has_value()) outcome.best_config = ConfigToString(loaded.space->ConfigAt(*best));
  return outcome;
}

}  // namespace tunefleet::bench
