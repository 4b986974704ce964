// ConfigFit: whether a config tuned at one shape is valid at another shape,
// by the spec's constraints. Every nearest-shape answer is checked with it
// before it is served (the coordinator's BestConfigIndex and
// tunefleet::BestConfigTable; python/tunefleet/table.py applies the same
// rule, and tests/data/nearest_fallback.json holds the cases all three pass).
#ifndef TUNEFLEET_COMMON_CONFIG_FIT_H_
#define TUNEFLEET_COMMON_CONFIG_FIT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/config_space.h"
#include "tunefleet/v1/kernel_spec.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet {

// A config fits a shape when it names every param of the spec once, each
// with one of the param's listed values, names no other param, and every
// checked constraint holds at that shape with the config's values.
// Checked: every constraint except one that names a device limit
// and no problem dim (directly or through derived values); such a constraint
// does not depend on the shape, and it held on the device the config was
// measured on. The limits a checked constraint names are the device's where
// the caller knows them, else the backend's placeholders (PlaceholderLimits).
//
// The derived values and constraints are compiled once (muParser, as
// ConfigSpace compiles them; launch geometry, arguments and metrics are not
// compiled); Fits binds values and evaluates.
//
// Thread-safety: safe for concurrent use. A call takes a compiled copy from a
// pool (under a mutex only to pop and to push it back); a call that finds the
// pool empty compiles one more copy, so there are never more copies than
// calls that ran at once.
class ConfigFit {
 public:
  // InvalidArgument, naming the expression, when a derived value or a
  // constraint does not compile with the backend's placeholder limits.
  static absl::StatusOr<std::unique_ptr<ConfigFit>> Create(const v1::KernelSpec& spec);
  ConfigFit(const ConfigFit&) = delete;
  ConfigFit& operator=(const ConfigFit&) = delete;
  ~ConfigFit();

  // Whether a checked constraint names a device limit (directly or through a
  // derived value): only then do the limits passed to Fits matter.
  bool uses_limits() const { return uses_limits_; }

  // Whether `config` fits the shape `dims`: the spec's problem dims in spec
  // order (as NormalizeShape orders them). `limits`: the device's where
  // known (nullptr: none); a name it lacks takes the placeholder value.
  // Costs one evaluation per checked constraint, until the first that breaks,
  // and per derived value they need; allocates nothing once a copy is pooled.
  // REQUIRES: dims.size() == the spec's problem dims.
  bool Fits(absl::Span<const int64_t> dims, const v1::Config& config,
            const DeviceLimits* limits = nullptr) const;

 private:
  ConfigFit() = default;
  absl::StatusOr<std::unique_ptr<ConfigSpace>> Compile() const;
  // Fills the plan below from a compiled copy.
  void Plan(const ConfigSpace& space);
  std::unique_ptr<ConfigSpace> Acquire() const ABSL_LOCKS_EXCLUDED(mu_);
  void Release(std::unique_ptr<ConfigSpace> space) const ABSL_LOCKS_EXCLUDED(mu_);
  // Writes the dims, the config's params and (when they matter) the limits
  // into the copy's symbols; false when the config is not one of the spec's.
  bool Bind(ConfigSpace* space, absl::Span<const int64_t> dims, const v1::Config& config,
            const DeviceLimits* limits) const;
  bool Holds(ConfigSpace* space) const;

  v1::KernelSpec spec_;  // only the problem, params, derived and constraints
  v1::Shape ones_;       // the spec's dims, all 1: the shape copies compile at
  DeviceLimits placeholder_;
  // The same in every copy: each is compiled from the same spec in the same order.
  size_t dim_base_ = 0;                   // symbol of the first dim
  std::vector<size_t> derived_;           // derived values to evaluate, in order
  std::vector<size_t> constraints_;       // constraints to check
  std::vector<double> placeholder_values_;  // by limit symbol
  bool uses_limits_ = false;

  mutable absl::Mutex mu_;
  mutable std::vector<std::unique_ptr<ConfigSpace>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_CONFIG_FIT_H_
