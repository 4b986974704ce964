#include "common/config_fit.h"

#include <algorithm>

#include "common/compiled_expr.h"
#include "common/status_macros.h"

namespace tunefleet {

absl::StatusOr<std::unique_ptr<ConfigFit>> ConfigFit::Create(const v1::KernelSpec& spec) {
  std::unique_ptr<ConfigFit> fit(new ConfigFit());
  v1::KernelSpec& kept = fit->spec_;
  kept.set_name(spec.name());
  kept.set_backend(spec.backend());
  *kept.mutable_problem() = spec.problem();
  *kept.mutable_params() = spec.params();
  *kept.mutable_derived() = spec.derived();
  *kept.mutable_constraints() = spec.constraints();
  for (const v1::Dimension& dim : spec.problem()) {
    v1::DimValue* one = fit->ones_.add_dims();
    one->set_name(dim.name());
    one->set_value(1);
  }
  fit->placeholder_ = PlaceholderLimits(spec.backend());
  ASSIGN_OR_RETURN(std::unique_ptr<ConfigSpace> space, fit->Compile());
  fit->Plan(*space);
  fit->Release(std::move(space));
  return fit;
}

ConfigFit::~ConfigFit() = default;

absl::StatusOr<std::unique_ptr<ConfigSpace>> ConfigFit::Compile() const {
  return ConfigSpace::Create(spec_, ones_, placeholder_);
}

void ConfigFit::Plan(const ConfigSpace& space) {
  dim_base_ = space.param_base_ - static_cast<size_t>(ones_.dims_size());
  placeholder_values_.assign(space.symbols_.begin(), space.symbols_.begin() + dim_base_);
  // What each expression names, directly or through the derived values it uses.
  struct Names {
    bool dim = false;
    bool limit = false;
  };
  std::vector<Names> of_derived(space.derived_.size());
  auto names_of = [&](const CompiledExpr& expr) {
    Names names;
    for (size_t symbol : expr.uses()) {
      if (symbol < dim_base_) {
        names.limit = true;
      } else if (symbol < space.param_base_) {
        names.dim = true;
      } else if (symbol >= space.derived_base_ && symbol < space.seconds_slot_) {
        const Names& derived = of_derived[symbol - space.derived_base_];
        names.dim |= derived.dim;
        names.limit |= derived.limit;
      }
    }
    return names;
  };
  for (size_t i = 0; i < space.derived_.size(); ++i) of_derived[i] = names_of(*space.derived_[i]);
  std::vector<bool> needed(space.derived_.size(), false);
  auto mark_derived = [&](const CompiledExpr& expr) {
    for (size_t symbol : expr.uses()) {
      if (symbol >= space.derived_base_ && symbol < space.seconds_slot_) {
        needed[symbol - space.derived_base_] = true;
      }
    }
  };
  for (size_t i = 0; i < space.constraints_.size(); ++i) {
    const Names names = names_of(*space.constraints_[i]);
    if (names.limit && !names.dim) continue;  // held where the config was measured
    constraints_.push_back(i);
    uses_limits_ |= names.limit;
    mark_derived(*space.constraints_[i]);
  }
  // A derived value names only earlier ones: one backward pass closes the set.
  for (size_t i = space.derived_.size(); i-- > 0;) {
    if (needed[i]) mark_derived(*space.derived_[i]);
  }
  for (size_t i = 0; i < space.derived_.size(); ++i) {
    if (needed[i]) derived_.push_back(i);
  }
}

bool ConfigFit::Fits(absl::Span<const int64_t> dims, const v1::Config& config,
                     const DeviceLimits* limits) const {
  std::unique_ptr<ConfigSpace> space = Acquire();
  if (space == nullptr) return false;
  const bool fits = Bind(space.get(), dims, config, limits) && Holds(space.get());
  Release(std::move(space));
  return fits;
}

std::unique_ptr<ConfigSpace> ConfigFit::Acquire() const {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<ConfigSpace> space = std::move(idle_.back());
      idle_.pop_back();
      return space;
    }
  }
  // Every copy in use: one more, compiled as the first was (so it compiles).
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space = Compile();
  return space.ok() ? *std::move(space) : nullptr;
}

void ConfigFit::Release(std::unique_ptr<ConfigSpace> space) const {
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(space));
}

bool ConfigFit::Bind(ConfigSpace* space, absl::Span<const int64_t> dims,
                     const v1::Config& config, const DeviceLimits* limits) const {
  std::vector<double>& symbols = space->symbols_;
  for (size_t i = 0; i < dims.size(); ++i) symbols[dim_base_ + i] = static_cast<double>(dims[i]);
  // As many values as params, and every param among them: each named once.
  if (config.values_size() != spec_.params_size()) return false;
  for (int i = 0; i < spec_.params_size(); ++i) {
    const v1::Parameter& param = spec_.params(i);
    auto named = std::find_if(config.values().begin(), config.values().end(),
                              [&](const v1::ParamValue& v) { return v.name() == param.name(); });
    if (named == config.values().end() ||
        std::find(param.values().begin(), param.values().end(), named->value()) ==
            param.values().end()) {
      return false;
    }
    symbols[space->param_base_ + i] = static_cast<double>(named->value());
  }
  if (!uses_limits_) return true;
  for (size_t i = 0; i < dim_base_; ++i) {
    symbols[i] = placeholder_values_[i];
    if (limits == nullptr) continue;
    auto known = limits->find(space->symbol_names_[i]);
    if (known != limits->end()) symbols[i] = known->second;
  }
  return true;
}

bool ConfigFit::Holds(ConfigSpace* space) const {
  for (size_t i : derived_) {
    space->symbols_[space->derived_base_ + i] = space->derived_[i]->ValueOrNan();
  }
  for (size_t i : constraints_) {
    if (!space->constraints_[i]->Holds()) return false;
  }
  return true;
}

}  // namespace tunefleet
