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
#include "absl/strings/string_view.h"
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
// one ConfigSpace per thread. The exceptions: ConfigAt, OrdinalOf and spec()
// read only the spec, fixed at Create, and may be called from any thread
// while one thread evaluates (the coordinator builds a lease's configs
// outside its job lock so). Configs are identified by their ordinal in the
// full cartesian space, params varying fastest from the last one.
//
// Every constraint and derived value is a pure function of the params it
// names (a derived value counts the params of the derived values it names),
// so the valid configs can be found by binding params in spec order and
// checking each constraint as soon as its last param is bound.
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
  // True when every constraint holds for the bound config. Allocates nothing.
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
  // The sizes of its dims, outermost first.
  absl::StatusOr<std::vector<int64_t>> TensorDims(int arg_index);
  absl::StatusOr<double> ScalarValue(int arg_index);
  // A tensor map argument at the bound config (kernel_spec.proto,
  // TensorMapArg): `used` false where its `when` is zero, else the box
  // (outermost dim first) and the swizzle span in bytes.
  struct TensorMapBox {
    bool used = false;
    int tensor_arg = -1;  // the index of the tensor argument it maps
    std::vector<int64_t> box;
    int64_t swizzle_bytes = 0;
  };
  absl::StatusOr<TensorMapBox> TensorMapValue(int arg_index);
  // Metric `index` for a median time of `seconds`.
  absl::StatusOr<double> Metric(int index, double seconds);
  // Any expression over the same names, evaluated once (for tools and tests).
  absl::StatusOr<double> Evaluate(const std::string& expr);

  const v1::KernelSpec& spec() const { return spec_; }
  // The shape and device limits the space was made for.
  const v1::Shape& shape() const { return shape_; }
  const DeviceLimits& limits() const { return limits_; }
  // After Bind: derived value `index` (spec order), NaN where it could not be
  // evaluated. For features of a cost model.
  int derived_count() const { return static_cast<int>(spec_.derived_size()); }
  double DerivedValue(int index) const { return symbols_[derived_base_ + index]; }
  // After Bind: the spec's priority expression (higher ranks first); NaN when
  // the spec has none or it cannot be evaluated.
  bool has_priority() const { return priority_ != nullptr; }
  double Priority();

 private:
  friend class ConfigEnumerator;
  friend class ConfigFit;

  // What the walk evaluates once the params before a level are bound:
  // level 0 has no params bound, level i + 1 has params 0..i.
  struct Level {
    std::vector<size_t> derived;      // indices into derived_, in order
    std::vector<size_t> constraints;  // indices into constraints_
  };

  ConfigSpace() = default;
  absl::Status Compile(const DeviceLimits& limits);
  // Fills levels_ and walk_depth_ from the names each expression uses.
  void PlanWalk();
  // Binds value `value_index` of param `param` (derived values are stale).
  void SetParam(int param, int value_index);
  // Evaluates the derived values of `level`, then whether its constraints
  // hold. REQUIRES: the params before `level` and the levels before it bound.
  bool EnterLevel(size_t level);
  absl::StatusOr<std::unique_ptr<CompiledExpr>> CompileExpr(
      const std::string& expr, const std::string& what);
  absl::StatusOr<int64_t> EvalSize(CompiledExpr* expr, int64_t fallback);

  v1::KernelSpec spec_;
  v1::Shape shape_;
  DeviceLimits limits_;
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
  struct TensorMapExprs {
    int tensor_arg = -1;
    std::vector<std::unique_ptr<CompiledExpr>> box;
    std::unique_ptr<CompiledExpr> swizzle_bytes;  // null: 0
    std::unique_ptr<CompiledExpr> when;           // null: always
  };
  std::vector<TensorMapExprs> tensor_maps_;  // by argument; tensor_arg -1 for others
  std::vector<std::unique_ptr<CompiledExpr>> metrics_;
  std::unique_ptr<CompiledExpr> priority_;
  std::vector<Level> levels_;  // params + 1 of them
  // Params from this one on appear in no constraint: every config sharing a
  // valid prefix of the first `walk_depth_` params is valid.
  int walk_depth_ = 0;
  // Counts writes to the params, so an enumerator knows when someone else
  // bound the space between two of its calls.
  uint64_t binds_ = 0;
};

// Walks the valid configs of a space lazily, in ordinal order, binding the
// params one at a time and skipping every config below a prefix that breaks
// a constraint. Rejecting a config allocates nothing.
//
// Thread-safety: as the space. The space may be bound by others between two
// calls; the enumerator binds its own prefix again when it resumes. After a
// call the space is bound to no config in particular: Bind the ordinal to
// evaluate it.
class ConfigEnumerator {
 public:
  explicit ConfigEnumerator(ConfigSpace* space);
  // Sets `ordinal` to the next valid config; false at the end.
  bool Next(uint64_t* ordinal);
  // Sets [*first, *first + *count) to the next valid configs, all of them
  // consecutive ordinals (count >= 1); false at the end. Same walk as Next:
  // the two may be mixed.
  bool NextRun(uint64_t* first, uint64_t* count);

 private:
  bool Refill();
  // Moves to the next prefix of walk_depth_ params under which every config
  // is valid; false at the end.
  bool Advance();
  void Rebind();
  uint64_t PrefixOrdinal() const;

  ConfigSpace* space_;
  int depth_ = 0;           // params of the prefix bound and checked
  std::vector<int> index_;  // value index of each prefix param
  uint64_t tail_ = 1;       // configs under one prefix
  uint64_t run_next_ = 0;   // the pending run [run_next_, run_end_)
  uint64_t run_end_ = 0;
  uint64_t binds_seen_ = 0;
  bool started_ = false;
  bool done_ = false;
};

// The ordinal in `space` of a config in short form ("A=1,B=2"), parsed and
// put in the order of the space's spec. The errors of ParseConfig,
// NormalizeConfig and ConfigSpace::OrdinalOf.
absl::StatusOr<uint64_t> OrdinalOfShortForm(const ConfigSpace& space, absl::string_view text);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_CONFIG_SPACE_H_
