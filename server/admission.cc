#include "server/admission.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/compile_options.h"
#include "common/config_text.h"
#include "common/sha256.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "common/tuning_key.h"
#include "server/best_derivation.h"
#include "server/job_input.h"
#include "server/search_strategy.h"

namespace tunefleet::server {
namespace {

absl::Status Prefixed(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

std::optional<uint64_t> DefaultOrdinal(const ConfigSpace& space) {
  absl::StatusOr<uint64_t> ordinal = OrdinalOfShortForm(space, space.spec().default_config());
  return ordinal.ok() ? std::optional<uint64_t>(*ordinal) : std::nullopt;
}

// The ordinals of the job's named config set, valid ones only, each once.
absl::StatusOr<std::vector<uint64_t>> ConfigSetOrdinals(const v1::JobSpec& spec,
                                                        ConfigSpace* space) {
  for (const v1::ConfigSet& set : spec.kernel().config_sets()) {
    if (set.name() != spec.config_set()) continue;
    std::vector<uint64_t> only;
    for (const std::string& text : set.configs()) {
      ASSIGN_OR_RETURN(v1::Config config, ParseConfig(text));
      ASSIGN_OR_RETURN(config, NormalizeConfig(spec.kernel(), config));
      ASSIGN_OR_RETURN(uint64_t ordinal, space->OrdinalOf(config));
      space->Bind(ordinal);
      if (space->Valid() && std::find(only.begin(), only.end(), ordinal) == only.end()) {
        only.push_back(ordinal);
      }
    }
    if (only.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config_set ", spec.config_set(), " has no valid config"));
    }
    return only;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("kernel has no config_set named ", spec.config_set()));
}

// The options of the job's strategy over `space`.
// The ordinals in `space` of the short-form `configs` that parse and name
// listed values; the rest are dropped (a warm start is advice).
std::vector<uint64_t> OrdinalsOf(const ConfigSpace& space,
                                 const google::protobuf::RepeatedPtrField<std::string>& configs) {
  std::vector<uint64_t> ordinals;
  for (const std::string& text : configs) {
    absl::StatusOr<uint64_t> ordinal = OrdinalOfShortForm(space, text);
    if (ordinal.ok()) ordinals.push_back(*ordinal);
  }
  return ordinals;
}

absl::StatusOr<StrategyOptions> StrategyFor(const v1::JobSpec& spec, ConfigSpace* space,
                                            int64_t max_trials) {
  StrategyOptions options;
  options.name = spec.strategy().empty() ? "exhaustive" : spec.strategy();
  // The coordinate strategy stops at its fixed point: without a budget, only
  // the per-job cap bounds it.
  options.budget = spec.budget() > 0                ? spec.budget()
                   : options.name == "coordinate" ? max_trials
                                                  : kDefaultTrialBudget;
  options.seed = spec.seed();
  options.max_trials = max_trials;
  options.default_ordinal = DefaultOrdinal(*space);
  if (!spec.config_set().empty()) {
    ASSIGN_OR_RETURN(options.only, ConfigSetOrdinals(spec, space));
  }
  return options;
}

absl::Status CheckSources(const AdmissionLimits& limits, v1::JobSpec* spec) {
  int64_t bytes = 0;
  for (v1::SourceFile& file : *spec->mutable_sources()) {
    bytes += static_cast<int64_t>(file.content().size());
    std::string digest = Sha256Hex(file.content());
    if (!file.digest().empty() && file.digest() != digest) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sources: digest of ", file.path(), " does not match its content"));
    }
    file.set_digest(std::move(digest));
  }
  if (bytes > limits.max_source_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "sources: ", bytes, " bytes, over the limit of ", limits.max_source_bytes));
  }
  for (const std::string& path : SpecFilePaths(spec->kernel())) {
    auto it = std::find_if(spec->sources().begin(), spec->sources().end(),
                           [&](const v1::SourceFile& f) { return f.path() == path; });
    if (it == spec->sources().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sources: the job does not carry ", path));
    }
  }
  return absl::OkStatus();
}

// The space and strategy of `spec` under `limits_of_device`, walked once.
struct Search {
  std::unique_ptr<ConfigSpace> space;
  std::unique_ptr<SearchStrategy> strategy;
  std::optional<uint64_t> default_ordinal;
};
// The space of `spec` under `limits_of_device`; ResourceExhausted over the
// cap. Compiles the expressions; walks nothing.
absl::StatusOr<std::unique_ptr<ConfigSpace>> SpaceOf(const AdmissionLimits& limits,
                                                     const v1::JobSpec& spec,
                                                     const DeviceLimits& limits_of_device) {
  ASSIGN_OR_RETURN(std::unique_ptr<ConfigSpace> space,
                   ConfigSpace::Create(spec.kernel(), spec.shape(), limits_of_device));
  if (space->full_size() > static_cast<uint64_t>(limits.max_space_points)) {
    return absl::ResourceExhaustedError(absl::StrCat("the config space has ",
                                                     space->full_size(),
                                                     " points, over the cap of ",
                                                     limits.max_space_points));
  }
  return space;
}

// The trials of `history` whose config is one of `space`'s, into
// `options`, with where each shape was measured (its shape as the spec
// normalizes it).
void AddHistory(const ConfigSpace& space, const FleetHistoryRows& history,
                StrategyOptions* options) {
  for (const FleetTrial& trial : history.trials) {
    absl::StatusOr<uint64_t> ordinal = OrdinalOfShortForm(space, trial.config);
    if (ordinal.ok()) {
      options->history.push_back(PriorResult{*ordinal, trial.median_seconds, trial.shape});
    }
  }
  for (const FleetShape& shape : history.shapes) {
    absl::StatusOr<v1::Shape> normalized = NormalizeShape(space.spec(), shape.shape);
    options->history_shapes.push_back(
        PriorShape{normalized.ok() ? *normalized : shape.shape, shape.limits, shape.measured});
  }
}

absl::StatusOr<Search> MakeSearch(
    const AdmissionLimits& limits, const v1::JobSpec& spec, const DeviceLimits& limits_of_device,
    const google::protobuf::RepeatedPtrField<std::string>& warm_start = {},
    const FleetHistoryRows& history = {}) {
  Search search;
  ASSIGN_OR_RETURN(search.space, SpaceOf(limits, spec, limits_of_device));
  ASSIGN_OR_RETURN(StrategyOptions options,
                   StrategyFor(spec, search.space.get(), limits.max_trials));
  options.warm_start = OrdinalsOf(*search.space, warm_start);
  AddHistory(*search.space, history, &options);
  search.default_ordinal = options.default_ordinal;
  ASSIGN_OR_RETURN(search.strategy, MakeStrategy(search.space.get(), options));
  return search;
}

DeviceLimits LimitsOf(const v1::StoredTarget& target) {
  v1::Device device;
  *device.mutable_limits() = target.limits();
  return LimitsFromDevice(device);
}

// `info`'s defender and its tolerance (StoredTarget.defender).
std::unique_ptr<TargetTrials> TrialsOf(const AdmissionLimits& limits, const v1::JobSpec& spec,
                                       Search search, const v1::StoredTarget& info) {
  auto trials = std::make_unique<TargetTrials>(
      std::move(search.space), std::move(search.strategy), limits.max_lease_attempts,
      search.default_ordinal, limits.finalists, spec.plateau_batches());
  if (!info.defender().empty()) {
    absl::StatusOr<uint64_t> ordinal = OrdinalOfShortForm(*trials->space(), info.defender());
    if (ordinal.ok()) trials->Defend(*ordinal, info.defender_tolerance());
  }
  return trials;
}

// The fields a spec read from disk cannot get wrong but a raw request can.
absl::Status CheckUntrustedFields(const AdmissionLimits& limits, const v1::JobSpec& spec) {
  RETURN_IF_ERROR(CheckEnums(spec.kernel()));
  RETURN_IF_ERROR(CheckSourcePaths(spec));
  RETURN_IF_ERROR(CheckTolerance(spec.kernel().tolerance()));
  return CheckStrategy(spec, limits.max_trials);
}

}  // namespace

absl::Status ValidateSpec(const AdmissionLimits& limits, bool walk_space,
                          v1::JobSpec* spec) {
  RETURN_IF_ERROR(CheckUntrustedFields(limits, *spec));
  RETURN_IF_ERROR(Prefixed("kernel: ", ValidateKernelSpec(spec->kernel())));
  RETURN_IF_ERROR(Prefixed("kernel: ", CheckCompileOptions(spec->kernel().backend(),
                                                           spec->kernel().compile_options())));
  RETURN_IF_ERROR(CheckSources(limits, spec));
  ASSIGN_OR_RETURN(*spec->mutable_shape(), NormalizeShape(spec->kernel(), spec->shape()));
  RETURN_IF_ERROR(CheckDims(spec->shape()));
  const DeviceLimits placeholder = PlaceholderLimits(spec->kernel().backend());
  ASSIGN_OR_RETURN(std::unique_ptr<ConfigSpace> space, SpaceOf(limits, *spec, placeholder));
  RETURN_IF_ERROR(CheckTensorBytes(space.get(), limits.max_tensor_bytes).status());
  if (walk_space) return MakeSearch(limits, *spec, placeholder).status();
  // Without the walk: the expressions compile, the space fits the cap and a
  // named config set exists.
  return StrategyFor(*spec, space.get(), limits.max_trials).status();
}

absl::StatusOr<TargetPlan> PlanTarget(
    const AdmissionLimits& limits, const v1::JobSpec& spec, const WorkerDevice& device,
    Store* cache, const std::vector<std::string>& warm_start,
    const std::function<FleetHistoryRows()>& history) {
  TargetPlan plan;
  plan.info.set_device_model(device.device.model());
  plan.info.set_toolkit(device.toolkit);
  *plan.info.mutable_limits() = device.device.limits();
  std::vector<v1::SourceFile> sources(spec.sources().begin(), spec.sources().end());
  plan.info.set_tuning_key(ComputeTuningKey(
      {&spec.kernel(), &sources, spec.shape(), device.device.model(), device.toolkit}));
  if (cache != nullptr) {
    absl::StatusOr<BestRecord> best = cache->GetBest(plan.info.tuning_key());
    const bool retune = spec.force_retune() || spec.replace_best();
    // A re-tune goes on without its defender when the store cannot say.
    if (!best.ok() && !absl::IsNotFound(best.status()) && !retune) return best.status();
    if (best.ok() && retune) {
      // A replacing job serves its own answer: nothing to defend.
      if (!spec.replace_best()) {
        plan.info.set_defender(best->config);
        // The job's own ranking; the served best is derived with the
        // quarantine applied (BestKeeper).
        absl::StatusOr<std::vector<TrialRecord>> rows = cache->ListKeyTrials(best->tuning_key);
        if (rows.ok()) {
          plan.info.set_defender_tolerance(DefenderTolerance(*rows, {}, best->config));
        }
      }
    } else if (best.ok()) {
      plan.info.set_cached(true);
      v1::Best* answer = plan.info.mutable_cached_best();
      answer->set_config_text(best->config);
      answer->set_median_seconds(best->median_seconds);
      ASSIGN_OR_RETURN(*answer->mutable_config(), ParseConfig(best->config));
      return plan;
    }
  }
  for (const std::string& config : warm_start) plan.info.add_warm_start(config);
  absl::StatusOr<Search> search =
      MakeSearch(limits, spec, LimitsFromDevice(device.device), plan.info.warm_start(),
                 history ? history() : FleetHistoryRows());
  if (!search.ok()) {
    return Prefixed(absl::StrCat("on ", device.device.model(), ": "), search.status());
  }
  plan.trials = TrialsOf(limits, spec, *std::move(search), plan.info);
  return plan;
}

absl::StatusOr<std::unique_ptr<TargetTrials>> ResumeTarget(
    const AdmissionLimits& limits, const v1::JobSpec& spec,
    const v1::StoredTarget& target, const FleetHistoryRows& history) {
  ASSIGN_OR_RETURN(Search search,
                   MakeSearch(limits, spec, LimitsOf(target), target.warm_start(), history));
  return TrialsOf(limits, spec, std::move(search), target);
}

}  // namespace tunefleet::server
