// A kernel's config space for one problem shape on one device: the spec's
// expressions compiled once (muParser bytecode) over a shared symbol table of
// dims, params, derived values and device limits.
#ifndef TUNEFLEET_COMMON_CONFIG_SPACE_H_
#define TUNEFLEET_COMMON_CONFIG_SPACE_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tunefleet/v1/kernel_spec.pb.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet {

using DeviceLimits = std::map<std::string, double>;

// Limits with the names a device of `backend` reports and generous values,
// for checking a spec before any device is known.
DeviceLimits PlaceholderLimits(v1::Backend backend);
DeviceLimits LimitsFromDevice(const v1::Device& device);

class CompiledExpr;

// Thread-safety: not thread-safe (evaluation writes the symbol table); use
// one ConfigSpace per thread. Configs are identified by their ordinal in the
// full cartesian space, params varying fastest from the last one.
class ConfigSpace {
 public:
  // Compiles every expression of `spec`. InvalidArgument naming the
  // expression when one does not parse or uses an unknown name; the shape
  // must be normalized (see NormalizeShape).
  static absl::StatusOr<std::unique_ptr<ConfigSpace>> Create(
      const v1::KernelSpec& spec, const v1::Shape& shape,
      const DeviceLimits& limits);
  ~ConfigSpace();

  // Number of points of the full cartesian space, saturated at UINT64_MAX.
  uint64_t full_size() const { return full_size_; }

  v1::Config ConfigAt(uint64_t ordinal) const;
  // REQUIRES: `config` normalized (every param, spec order).
  absl::StatusOr<uint64_t> OrdinalOf(const v1::Config& config) const;

  // Binds the config's params and evaluates the derived values. Later calls
  // evaluate against this config.
  void Bind(uint64_t ordinal);
  absl::Status Bind(const v1::Config& config);
  // True when every constraint holds for the bound config.
  bool Valid();
  // The first constraint the bound config breaks, or OK.
  absl::Status CheckConstraints();

  // Values of the bound config. InvalidArgument on a bad expression result
  // (negative size, NaN).
  absl::StatusOr<std::array<int64_t, 3>> Grid();
  absl::StatusOr<std::array<int64_t, 3>> Block();
  absl::StatusOr<int64_t> SharedMemBytes();
  // Element count of tensor argument `arg_index` (product of its shape).
  absl::StatusOr<int64_t> TensorElements(int arg_index);
  absl::StatusOr<double> ScalarValue(int arg_index);
  // Metric `index` for a median time of `seconds`.
  absl::StatusOr<double> Metric(int index, double seconds);
  // Any expression over the same names, evaluated once (for tools and tests).
  absl::StatusOr<double> Evaluate(const std::string& expr);

  const v1::KernelSpec& spec() const { return spec_; }

 private:
  ConfigSpace() = default;
  absl::Status Compile(const DeviceLimits& limits);
  absl::StatusOr<std::unique_ptr<CompiledExpr>> CompileExpr(
      const std::string& expr, const std::string& what);
  absl::StatusOr<int64_t> EvalSize(CompiledExpr* expr, int64_t fallback);

  v1::KernelSpec spec_;
  v1::Shape shape_;
  uint64_t full_size_ = 0;
  // Symbol storage; muParser binds variables by address, so its size is
  // fixed after Compile.
  std::vector<double> symbols_;
  std::vector<std::string> symbol_names_;
  size_t param_base_ = 0;
  size_t derived_base_ = 0;
  size_t seconds_slot_ = 0;
  std::vector<std::unique_ptr<CompiledExpr>> derived_;
  std::vector<std::unique_ptr<CompiledExpr>> constraints_;
  std::array<std::unique_ptr<CompiledExpr>, 7> launch_;
  std::vector<std::vector<std::unique_ptr<CompiledExpr>>> tensor_shapes_;
  std::vector<std::unique_ptr<CompiledExpr>> scalars_;
  std::vector<std::unique_ptr<CompiledExpr>> metrics_;
};

// Walks the valid configs of a space lazily, in ordinal order.
class ConfigEnumerator {
 public:
  explicit ConfigEnumerator(ConfigSpace* space) : space_(space) {}
  // Sets `ordinal` to the next valid config; false at the end.
  bool Next(uint64_t* ordinal);

 private:
  ConfigSpace* space_;
  uint64_t next_ = 0;
};

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_CONFIG_SPACE_H_
