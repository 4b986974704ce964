#include "common/config_space.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/compiled_expr.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"

namespace tunefleet {
namespace {

double Floor(double x) { return std::floor(x); }
double Ceil(double x) { return std::ceil(x); }
double CeilDiv(double a, double b) { return std::ceil(a / b); }
double Mod(double a, double b) { return std::fmod(a, b); }
double IsPow2(double x) {
  if (x < 1 || x != std::floor(x)) return 0;
  auto v = static_cast<uint64_t>(x);
  return (v & (v - 1)) == 0 ? 1 : 0;
}

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) {
    return std::numeric_limits<uint64_t>::max();
  }
  return a * b;
}

}  // namespace

DeviceLimits PlaceholderLimits(v1::Backend backend) {
  if (backend == v1::BACKEND_CUDA || backend == v1::BACKEND_PYTHON) {
    return {{"max_threads_per_block", 1024},
            {"max_smem_per_block", 49152},
            {"max_smem_per_block_optin", 232448},
            {"smem_per_sm", 233472},
            {"regs_per_block", 65536},
            {"regs_per_sm", 65536},
            {"max_threads_per_sm", 2048},
            {"max_blocks_per_sm", 32},
            {"sm_count", 132},
            {"l2_bytes", 52428800},
            {"warp_size", 32},
            {"cc_major", 9},
            {"cc_minor", 0}};
  }
  return {{"cores", 64},
          {"l1d_bytes", 49152},
          {"l2_bytes", 2097152},
          {"l3_bytes", 33554432}};
}

DeviceLimits LimitsFromDevice(const v1::Device& device) {
  DeviceLimits limits;
  for (const v1::DeviceLimit& limit : device.limits()) {
    limits[limit.name()] = limit.value();
  }
  return limits;
}

absl::StatusOr<std::unique_ptr<ConfigSpace>> ConfigSpace::Create(
    const v1::KernelSpec& spec, const v1::Shape& shape,
    const DeviceLimits& limits) {
  std::unique_ptr<ConfigSpace> space(new ConfigSpace());
  space->spec_ = spec;
  space->shape_ = shape;
  space->limits_ = limits;
  space->full_size_ = 1;
  for (const v1::Parameter& param : spec.params()) {
    space->full_size_ =
        SaturatingMul(space->full_size_, static_cast<uint64_t>(param.values_size()));
  }
  RETURN_IF_ERROR(space->Compile(limits));
  return space;
}

ConfigSpace::~ConfigSpace() = default;

absl::Status ConfigSpace::Compile(const DeviceLimits& limits) {
  for (const auto& [name, value] : limits) {
    symbol_names_.push_back(name);
    symbols_.push_back(value);
  }
  for (const v1::DimValue& dim : shape_.dims()) {
    symbol_names_.push_back(dim.name());
    symbols_.push_back(static_cast<double>(dim.value()));
  }
  param_base_ = symbols_.size();
  for (const v1::Parameter& param : spec_.params()) {
    symbol_names_.push_back(param.name());
    symbols_.push_back(static_cast<double>(param.values(0)));
  }
  derived_base_ = symbols_.size();
  for (const v1::Derived& derived : spec_.derived()) {
    symbol_names_.push_back(derived.name());
    symbols_.push_back(0);
  }
  seconds_slot_ = symbols_.size();
  symbol_names_.push_back("seconds");
  symbols_.push_back(1);

  // Derived values see only the names before them, so compile and evaluate
  // them in order with the symbol table growing.
  for (int i = 0; i < spec_.derived_size(); ++i) {
    ASSIGN_OR_RETURN(derived_.emplace_back(),
                     CompileExpr(spec_.derived(i).expr(),
                                 absl::StrCat("derived ", spec_.derived(i).name())));
  }
  for (int i = 0; i < spec_.constraints_size(); ++i) {
    ASSIGN_OR_RETURN(constraints_.emplace_back(),
                     CompileExpr(spec_.constraints(i).expr(),
                                 absl::StrCat("constraint #", i + 1)));
  }
  const v1::Launch& launch = spec_.launch();
  const std::array<std::pair<const std::string*, const char*>, 7> fields = {{
      {&launch.grid_x(), "launch.grid_x"},
      {&launch.grid_y(), "launch.grid_y"},
      {&launch.grid_z(), "launch.grid_z"},
      {&launch.block_x(), "launch.block_x"},
      {&launch.block_y(), "launch.block_y"},
      {&launch.block_z(), "launch.block_z"},
      {&launch.shared_mem_bytes(), "launch.shared_mem_bytes"},
  }};
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].first->empty()) continue;
    ASSIGN_OR_RETURN(launch_[i], CompileExpr(*fields[i].first, fields[i].second));
  }
  tensor_shapes_.resize(spec_.args_size());
  scalars_.resize(spec_.args_size());
  tensor_maps_.resize(spec_.args_size());
  for (int i = 0; i < spec_.args_size(); ++i) {
    const v1::Argument& arg = spec_.args(i);
    if (arg.has_tensor()) {
      for (int d = 0; d < arg.tensor().shape_size(); ++d) {
        ASSIGN_OR_RETURN(
            tensor_shapes_[i].emplace_back(),
            CompileExpr(arg.tensor().shape(d),
                        absl::StrCat("argument ", arg.name(), " shape[", d, "]")));
      }
    } else if (arg.has_tensor_map()) {
      const v1::TensorMapArg& map = arg.tensor_map();
      TensorMapExprs& exprs = tensor_maps_[i];
      exprs.tensor_arg = TensorArgIndex(spec_, map.tensor());
      if (exprs.tensor_arg < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "argument ", arg.name(), ": \"", map.tensor(), "\" is no tensor argument"));
      }
      for (int d = 0; d < map.box_size(); ++d) {
        ASSIGN_OR_RETURN(exprs.box.emplace_back(),
                         CompileExpr(map.box(d), absl::StrCat("argument ", arg.name(),
                                                              " box[", d, "]")));
      }
      if (!map.swizzle_bytes().empty()) {
        ASSIGN_OR_RETURN(exprs.swizzle_bytes,
                         CompileExpr(map.swizzle_bytes(),
                                     absl::StrCat("argument ", arg.name(), " swizzle_bytes")));
      }
      if (!map.when().empty()) {
        ASSIGN_OR_RETURN(exprs.when, CompileExpr(map.when(), absl::StrCat("argument ",
                                                                          arg.name(), " when")));
      }
    } else {
      ASSIGN_OR_RETURN(scalars_[i],
                       CompileExpr(arg.scalar().expr(),
                                   absl::StrCat("argument ", arg.name())));
    }
  }
  for (const v1::Metric& metric : spec_.metrics()) {
    ASSIGN_OR_RETURN(metrics_.emplace_back(),
                     CompileExpr(metric.expr(), absl::StrCat("metric ", metric.name())));
  }
  if (!spec_.priority().empty()) {
    ASSIGN_OR_RETURN(priority_, CompileExpr(spec_.priority(), "priority"));
  }
  PlanWalk();
  return absl::OkStatus();
}

void ConfigSpace::PlanWalk() {
  // The level of an expression: 1 + the last param it depends on, 0 for none.
  std::vector<size_t> derived_level(derived_.size(), 0);
  auto level_of = [&](const CompiledExpr& expr) {
    size_t level = 0;
    for (size_t symbol : expr.uses()) {
      if (symbol >= param_base_ && symbol < derived_base_) {
        level = std::max(level, symbol - param_base_ + 1);
      } else if (symbol >= derived_base_ && symbol < seconds_slot_) {
        level = std::max(level, derived_level[symbol - derived_base_]);
      }
    }
    return level;
  };
  std::vector<bool> needed(derived_.size(), false);
  auto mark_derived = [&](const CompiledExpr& expr) {
    for (size_t symbol : expr.uses()) {
      if (symbol >= derived_base_ && symbol < seconds_slot_) needed[symbol - derived_base_] = true;
    }
  };
  for (size_t i = 0; i < derived_.size(); ++i) derived_level[i] = level_of(*derived_[i]);
  levels_.assign(spec_.params_size() + 1, Level{});
  for (size_t i = 0; i < constraints_.size(); ++i) {
    size_t level = level_of(*constraints_[i]);
    levels_[level].constraints.push_back(i);
    walk_depth_ = std::max(walk_depth_, static_cast<int>(level));
    mark_derived(*constraints_[i]);
  }
  // A derived value names only earlier ones, so one backward pass closes the
  // set the constraints need; the rest are never evaluated by the walk.
  for (size_t i = derived_.size(); i-- > 0;) {
    if (needed[i]) mark_derived(*derived_[i]);
  }
  for (size_t i = 0; i < derived_.size(); ++i) {
    if (needed[i]) levels_[derived_level[i]].derived.push_back(i);
  }
}

absl::StatusOr<std::unique_ptr<CompiledExpr>> ConfigSpace::CompileExpr(
    const std::string& text, const std::string& what) {
  auto expr = std::make_unique<CompiledExpr>(text, what);
  mu::Parser& parser = expr->parser();
  try {
    parser.DefineFun("floor", Floor);
    parser.DefineFun("ceil", Ceil);
    parser.DefineFun("cdiv", CeilDiv);
    parser.DefineFun("is_pow2", IsPow2);
    parser.DefineOprt("%", Mod, mu::prMUL_DIV, mu::oaLEFT);
    // A derived value may use only the derived values defined before it.
    size_t visible = symbols_.size();
    if (what.rfind("derived ", 0) == 0) visible = derived_base_ + derived_.size();
    for (size_t i = 0; i < visible; ++i) {
      if (i >= derived_base_ + derived_.size() && i < seconds_slot_) continue;
      if (i == seconds_slot_ && what.rfind("metric ", 0) != 0) continue;
      parser.DefineVar(symbol_names_[i], &symbols_[i]);
    }
    parser.SetExpr(text);
  } catch (const mu::Parser::exception_type& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", text, "\": ", e.GetMsg()));
  }
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  // muParser parses lazily; evaluate once so unknown names surface here.
  RETURN_IF_ERROR(expr->Eval().status());
  try {
    for (const auto& [name, address] : parser.GetUsedVar()) {
      expr->uses().push_back(static_cast<size_t>(address - symbols_.data()));
    }
  } catch (const mu::Parser::exception_type& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", text, "\": ", e.GetMsg()));
  }
  // GetUsedVar drops the bytecode; build it again now rather than on the
  // first evaluation of a walk.
  RETURN_IF_ERROR(expr->Eval().status());
  return expr;
}

v1::Config ConfigSpace::ConfigAt(uint64_t ordinal) const {
  v1::Config config;
  std::vector<int64_t> values(spec_.params_size());
  for (int i = spec_.params_size() - 1; i >= 0; --i) {
    const auto& param = spec_.params(i);
    values[i] = param.values(static_cast<int>(ordinal % param.values_size()));
    ordinal /= param.values_size();
  }
  for (int i = 0; i < spec_.params_size(); ++i) {
    v1::ParamValue* pv = config.add_values();
    pv->set_name(spec_.params(i).name());
    pv->set_value(values[i]);
  }
  return config;
}

absl::StatusOr<uint64_t> ConfigSpace::OrdinalOf(const v1::Config& config) const {
  if (config.values_size() != spec_.params_size()) {
    return absl::InvalidArgumentError("config does not name every param");
  }
  uint64_t ordinal = 0;
  for (int i = 0; i < spec_.params_size(); ++i) {
    const auto& values = spec_.params(i).values();
    auto it = std::find(values.begin(), values.end(), config.values(i).value());
    if (config.values(i).name() != spec_.params(i).name() || it == values.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "param ", spec_.params(i).name(), " has no listed value ",
          config.values(i).value()));
    }
    ordinal = ordinal * values.size() + static_cast<uint64_t>(it - values.begin());
  }
  return ordinal;
}

void ConfigSpace::Bind(uint64_t ordinal) {
  for (int i = spec_.params_size() - 1; i >= 0; --i) {
    const auto& param = spec_.params(i);
    symbols_[param_base_ + i] =
        static_cast<double>(param.values(static_cast<int>(ordinal % param.values_size())));
    ordinal /= param.values_size();
  }
  ++binds_;
  for (size_t i = 0; i < derived_.size(); ++i) {
    symbols_[derived_base_ + i] = derived_[i]->ValueOrNan();
  }
}

absl::Status ConfigSpace::Bind(const v1::Config& config) {
  ASSIGN_OR_RETURN(uint64_t ordinal, OrdinalOf(config));
  Bind(ordinal);
  return absl::OkStatus();
}

void ConfigSpace::SetParam(int param, int value_index) {
  symbols_[param_base_ + param] =
      static_cast<double>(spec_.params(param).values(value_index));
  ++binds_;
}

bool ConfigSpace::EnterLevel(size_t level) {
  for (size_t i : levels_[level].derived) {
    symbols_[derived_base_ + i] = derived_[i]->ValueOrNan();
  }
  for (size_t i : levels_[level].constraints) {
    if (!constraints_[i]->Holds()) return false;
  }
  return true;
}

bool ConfigSpace::Valid() {
  for (const auto& constraint : constraints_) {
    if (!constraint->Holds()) return false;
  }
  return true;
}

absl::Status ConfigSpace::CheckConstraints() {
  for (size_t i = 0; i < constraints_.size(); ++i) {
    absl::StatusOr<double> value = constraints_[i]->Eval();
    if (!value.ok()) return value.status();
    if (*value == 0 || std::isnan(*value)) {
      const v1::Constraint& c = spec_.constraints(static_cast<int>(i));
      return absl::InvalidArgumentError(absl::StrCat(
          "breaks constraint \"", c.expr(), "\"",
          c.reason().empty() ? "" : absl::StrCat(" (", c.reason(), ")")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ConfigSpace::EvalSize(CompiledExpr* expr,
                                              int64_t fallback) {
  if (expr == nullptr) return fallback;
  ASSIGN_OR_RETURN(double value, expr->Eval());
  if (!(value >= 0) || value > 9.0e18) {
    return absl::InvalidArgumentError(absl::StrCat(
        expr->what(), " \"", expr->text(), "\" gives ", value,
        ", not a size"));
  }
  return static_cast<int64_t>(std::llround(value));
}

absl::StatusOr<std::array<int64_t, 3>> ConfigSpace::Grid() {
  std::array<int64_t, 3> out;
  for (int i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(out[i], EvalSize(launch_[i].get(), 1));
  }
  return out;
}

absl::StatusOr<std::array<int64_t, 3>> ConfigSpace::Block() {
  std::array<int64_t, 3> out;
  for (int i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(out[i], EvalSize(launch_[3 + i].get(), 1));
  }
  return out;
}

absl::StatusOr<int64_t> ConfigSpace::SharedMemBytes() {
  return EvalSize(launch_[6].get(), 0);
}

absl::StatusOr<int64_t> ConfigSpace::TensorElements(int arg_index) {
  ASSIGN_OR_RETURN(const std::vector<int64_t> dims, TensorDims(arg_index));
  int64_t elements = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] != 0 && elements > std::numeric_limits<int64_t>::max() / dims[d]) {
      return absl::InvalidArgumentError(
          absl::StrCat(tensor_shapes_[arg_index][d]->what(), ": tensor size overflows"));
    }
    elements *= dims[d];
  }
  return elements;
}

absl::StatusOr<std::vector<int64_t>> ConfigSpace::TensorDims(int arg_index) {
  if (arg_index < 0 || arg_index >= static_cast<int>(tensor_shapes_.size()) ||
      tensor_shapes_[arg_index].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument #", arg_index, " is not a tensor"));
  }
  std::vector<int64_t> dims;
  for (const auto& dim : tensor_shapes_[arg_index]) {
    ASSIGN_OR_RETURN(dims.emplace_back(), EvalSize(dim.get(), 1));
  }
  return dims;
}

absl::StatusOr<double> ConfigSpace::ScalarValue(int arg_index) {
  if (arg_index < 0 || arg_index >= static_cast<int>(scalars_.size()) ||
      scalars_[arg_index] == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument #", arg_index, " is not a scalar"));
  }
  return scalars_[arg_index]->Eval();
}

absl::StatusOr<ConfigSpace::TensorMapBox> ConfigSpace::TensorMapValue(int arg_index) {
  if (arg_index < 0 || arg_index >= static_cast<int>(tensor_maps_.size()) ||
      tensor_maps_[arg_index].tensor_arg < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument #", arg_index, " is not a tensor map"));
  }
  const TensorMapExprs& exprs = tensor_maps_[arg_index];
  TensorMapBox out;
  out.tensor_arg = exprs.tensor_arg;
  if (exprs.when != nullptr) {
    ASSIGN_OR_RETURN(double when, exprs.when->Eval());
    if (when == 0) return out;
  }
  out.used = true;
  for (const auto& dim : exprs.box) {
    ASSIGN_OR_RETURN(out.box.emplace_back(), EvalSize(dim.get(), 1));
  }
  ASSIGN_OR_RETURN(out.swizzle_bytes, EvalSize(exprs.swizzle_bytes.get(), 0));
  return out;
}

absl::StatusOr<double> ConfigSpace::Metric(int index, double seconds) {
  if (index < 0 || index >= static_cast<int>(metrics_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("no metric #", index));
  }
  symbols_[seconds_slot_] = seconds;
  return metrics_[index]->Eval();
}

double ConfigSpace::Priority() {
  return priority_ ? priority_->ValueOrNan() : std::numeric_limits<double>::quiet_NaN();
}

absl::StatusOr<double> ConfigSpace::Evaluate(const std::string& expr) {
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledExpr> compiled,
                   CompileExpr(expr, "expression"));
  return compiled->Eval();
}

ConfigEnumerator::ConfigEnumerator(ConfigSpace* space)
    : space_(space), index_(space->walk_depth_, 0) {
  const auto& params = space->spec_.params();
  for (int i = space->walk_depth_; i < params.size(); ++i) {
    tail_ = SaturatingMul(tail_, static_cast<uint64_t>(params[i].values_size()));
  }
}

bool ConfigEnumerator::Next(uint64_t* ordinal) {
  if (run_next_ == run_end_ && !Refill()) return false;
  *ordinal = run_next_++;
  return true;
}

bool ConfigEnumerator::NextRun(uint64_t* first, uint64_t* count) {
  if (run_next_ == run_end_ && !Refill()) return false;
  *first = run_next_;
  *count = run_end_ - run_next_;
  run_next_ = run_end_;
  return true;
}

bool ConfigEnumerator::Refill() {
  if (done_ || tail_ == 0 || !Advance()) {
    done_ = true;
    return false;
  }
  run_next_ = PrefixOrdinal() * tail_;
  run_end_ = run_next_ + tail_;
  return true;
}

bool ConfigEnumerator::Advance() {
  const int depth = space_->walk_depth_;
  if (!started_) {
    started_ = true;
    if (!space_->EnterLevel(0)) return false;
  } else {
    if (depth == 0) return false;  // the empty prefix was the only one
    if (space_->binds_ != binds_seen_) Rebind();
    depth_ = depth - 1;
    ++index_[depth_];
  }
  const auto& params = space_->spec_.params();
  // Depth-first: index_[depth_] is the next value to try for param depth_.
  while (depth_ < depth) {
    if (index_[depth_] == params[depth_].values_size()) {
      if (depth_ == 0) return false;
      index_[depth_] = 0;
      ++index_[--depth_];
    } else {
      space_->SetParam(depth_, index_[depth_]);
      if (space_->EnterLevel(depth_ + 1)) {
        ++depth_;
      } else {
        ++index_[depth_];
      }
    }
  }
  binds_seen_ = space_->binds_;
  return true;
}

void ConfigEnumerator::Rebind() {
  space_->EnterLevel(0);
  for (int i = 0; i + 1 < space_->walk_depth_; ++i) {
    space_->SetParam(i, index_[i]);
    space_->EnterLevel(i + 1);
  }
}

uint64_t ConfigEnumerator::PrefixOrdinal() const {
  const auto& params = space_->spec_.params();
  uint64_t ordinal = 0;
  for (int i = 0; i < space_->walk_depth_; ++i) {
    ordinal = ordinal * static_cast<uint64_t>(params[i].values_size()) +
              static_cast<uint64_t>(index_[i]);
  }
  return ordinal;
}

absl::StatusOr<uint64_t> OrdinalOfShortForm(const ConfigSpace& space, absl::string_view text) {
  ASSIGN_OR_RETURN(v1::Config parsed, ParseConfig(text));
  ASSIGN_OR_RETURN(v1::Config config, NormalizeConfig(space.spec(), parsed));
  return space.OrdinalOf(config);
}

}  // namespace tunefleet
