#include "server/job_input.h"

#include "server/search_strategy.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/config_text.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"

namespace tunefleet::server {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

absl::Status CheckArgEnums(const v1::Argument& arg, int index) {
  const std::string field = absl::StrCat("kernel.args[", index, "]");
  if (arg.has_scalar() && !v1::DType_IsValid(arg.scalar().dtype())) {
    return Invalid(absl::StrCat(field, ".scalar.dtype"),
                   absl::StrCat("unknown value ", arg.scalar().dtype()));
  }
  if (!arg.has_tensor()) return absl::OkStatus();
  const v1::TensorArg& tensor = arg.tensor();
  if (!v1::DType_IsValid(tensor.dtype())) {
    return Invalid(absl::StrCat(field, ".tensor.dtype"),
                   absl::StrCat("unknown value ", tensor.dtype()));
  }
  if (!v1::Role_IsValid(tensor.role())) {
    return Invalid(absl::StrCat(field, ".tensor.role"),
                   absl::StrCat("unknown value ", tensor.role()));
  }
  if (!v1::Distribution::Kind_IsValid(tensor.init().kind())) {
    return Invalid(absl::StrCat(field, ".tensor.init.kind"),
                   absl::StrCat("unknown value ", tensor.init().kind()));
  }
  return absl::OkStatus();
}

// Why `path` is not a safe relative path, or "" when it is.
std::string PathProblem(absl::string_view path) {
  if (path.empty()) return "is empty";
  if (path.size() > kMaxSourcePathBytes) {
    return absl::StrCat("is ", path.size(), " bytes, over ", kMaxSourcePathBytes);
  }
  for (char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return "holds a control character";
  }
  if (path.front() == '/') return "is absolute";
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty()) return "has an empty component";
    if (part == "..") return "has a \"..\" component";
  }
  return "";
}

absl::Status CheckPaths(absl::string_view field,
                        const google::protobuf::RepeatedPtrField<std::string>& paths,
                        bool unique) {
  absl::flat_hash_set<absl::string_view> seen;
  for (int i = 0; i < paths.size(); ++i) {
    const std::string where = absl::StrCat(field, "[", i, "]");
    std::string problem = PathProblem(paths[i]);
    if (!problem.empty()) return Invalid(where, absl::StrCat("path ", problem));
    if (unique && !seen.insert(paths[i]).second) {
      return Invalid(where, absl::StrCat("path \"", paths[i], "\" is given twice"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFinite(absl::string_view field, double value, double max) {
  if (!std::isfinite(value) || value < 0 || value > max) {
    return Invalid(field, absl::StrCat(value, " is not a number in [0, ", max, "]"));
  }
  return absl::OkStatus();
}

// Bytes of one element, 0 for an unknown dtype.
int64_t BytesPerElement(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_F16:
    case v1::DTYPE_BF16: return 2;
    case v1::DTYPE_F32:
    case v1::DTYPE_I32: return 4;
    case v1::DTYPE_F64:
    case v1::DTYPE_I64: return 8;
    default: return 0;
  }
}

absl::Status BindDefault(ConfigSpace* space) {
  ASSIGN_OR_RETURN(v1::Config config, ParseConfig(space->spec().default_config()));
  ASSIGN_OR_RETURN(config, NormalizeConfig(space->spec(), config));
  return space->Bind(config);
}

}  // namespace

absl::Status CheckEnums(const v1::KernelSpec& spec) {
  if (!v1::Backend_IsValid(spec.backend())) {
    return Invalid("kernel.backend", absl::StrCat("unknown value ", spec.backend()));
  }
  for (int i = 0; i < spec.args_size(); ++i) {
    RETURN_IF_ERROR(CheckArgEnums(spec.args(i), i));
  }
  return absl::OkStatus();
}

absl::Status CheckSourcePaths(const v1::JobSpec& spec) {
  RETURN_IF_ERROR(CheckPaths("kernel.sources", spec.kernel().sources(), /*unique=*/true));
  RETURN_IF_ERROR(CheckPaths("kernel.reference.sources", spec.kernel().reference().sources(),
                             /*unique=*/true));
  google::protobuf::RepeatedPtrField<std::string> carried;
  for (const v1::SourceFile& file : spec.sources()) *carried.Add() = file.path();
  return CheckPaths("sources", carried, /*unique=*/true);
}

absl::Status CheckTolerance(const v1::Tolerance& tolerance) {
  constexpr double kMax = std::numeric_limits<double>::max();
  RETURN_IF_ERROR(CheckFinite("kernel.tolerance.rtol", tolerance.rtol(), kMax));
  RETURN_IF_ERROR(CheckFinite("kernel.tolerance.atol", tolerance.atol(), kMax));
  return CheckFinite("kernel.tolerance.max_mismatch_ratio", tolerance.max_mismatch_ratio(),
                     kMaxMismatchRatio);
}

absl::Status CheckStrategy(const v1::JobSpec& spec, int64_t max_trials) {
  const std::string& name = spec.strategy();
  if (!name.empty() && name != "exhaustive" && name != "random" && name != "model" &&
      name != "evolutionary" && name != "coordinate") {
    return Invalid("strategy",
                   absl::StrCat("unknown strategy \"", name, "\" (", kStrategyNames, ")"));
  }
  if (spec.budget() < 0) {
    return Invalid("budget", absl::StrCat(spec.budget(), " is negative"));
  }
  if (spec.budget() > max_trials) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "budget: ", spec.budget(), " is over the cap of ", max_trials, " trials"));
  }
  if (spec.time_budget_seconds() < 0 || spec.time_budget_seconds() > kMaxTimeBudgetSeconds) {
    return Invalid("time_budget_seconds",
                   absl::StrCat(spec.time_budget_seconds(), " is not a number of seconds in [0, ",
                                kMaxTimeBudgetSeconds, "] (0: no time budget)"));
  }
  if (spec.plateau_batches() < 0 || spec.plateau_batches() > kMaxPlateauBatches) {
    return Invalid("plateau_batches",
                   absl::StrCat(spec.plateau_batches(), " is not a number of batches in [0, ",
                                kMaxPlateauBatches, "] (0: no plateau rule)"));
  }
  return absl::OkStatus();
}

absl::Status CheckDims(const v1::Shape& shape) {
  for (const v1::DimValue& dim : shape.dims()) {
    if (dim.value() > kMaxDimValue) {
      return Invalid(absl::StrCat("shape dim ", dim.name()),
                     absl::StrCat(dim.value(), " is over the limit of ", kMaxDimValue));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CheckTensorBytes(ConfigSpace* space, int64_t max_bytes) {
  RETURN_IF_ERROR(BindDefault(space));
  const v1::KernelSpec& spec = space->spec();
  int64_t total = 0;
  for (int i = 0; i < spec.args_size(); ++i) {
    if (!spec.args(i).has_tensor()) continue;
    const std::string field = absl::StrCat("tensor ", spec.args(i).name());
    ASSIGN_OR_RETURN(int64_t elements, space->TensorElements(i));
    int64_t bytes = 0;
    if (__builtin_mul_overflow(elements, BytesPerElement(spec.args(i).tensor().dtype()),
                               &bytes) ||
        __builtin_add_overflow(total, bytes, &total)) {
      return Invalid(field, absl::StrCat(elements, " elements: the size overflows"));
    }
  }
  if (total > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "tensors: ", total, " bytes under the default config, over the limit of ",
        max_bytes, " (--max-tensor-bytes)"));
  }
  return total;
}

}  // namespace tunefleet::server
