#include "common/file_util.h"
#include "common/spec_loader.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config_text.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace tunefleet {
namespace {

class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstErrorCollector(absl::string_view filename)
      : filename_(filename) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!error_.empty()) return;
    error_ = absl::StrCat(filename_, ":", line + 1, ":", column + 1, ": ",
                          message);
  }
  const std::string& error() const { return error_; }

 private:
  std::string filename_;
  std::string error_;
};

bool IsIdentifier(absl::string_view name) {
  if (name.empty() || !(std::isalpha(name[0]) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
      return false;
    }
  }
  return true;
}

absl::Status CheckNames(const v1::KernelSpec& spec) {
  absl::flat_hash_set<std::string> names;
  auto add = [&](const std::string& name,
                 absl::string_view what) -> absl::Status {
    if (!IsIdentifier(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " name \"", name, "\" is not an identifier"));
    }
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " name \"", name, "\" is used twice"));
    }
    return absl::OkStatus();
  };
  for (const auto& dim : spec.problem()) RETURN_IF_ERROR(add(dim.name(), "dim"));
  for (const auto& param : spec.params()) {
    RETURN_IF_ERROR(add(param.name(), "param"));
    if (param.values().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("param ", param.name(), " lists no values"));
    }
  }
  for (const auto& derived : spec.derived()) {
    RETURN_IF_ERROR(add(derived.name(), "derived"));
  }
  return absl::OkStatus();
}

// A tensor map (BACKEND_CUDA) names a tensor argument and gives a box
// expression for each of its dims.
absl::Status CheckTensorMap(const v1::KernelSpec& spec, const v1::Argument& arg) {
  const v1::TensorMapArg& map = arg.tensor_map();
  auto bad = [&](absl::string_view problem) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor map argument ", arg.name(), " ", problem));
  };
  if (spec.backend() != v1::BACKEND_CUDA) {
    return bad("is a CUDA tensor map; only BACKEND_CUDA kernels take one");
  }
  const int index = TensorArgIndex(spec, map.tensor());
  if (index < 0) {
    return bad(absl::StrCat("names \"", map.tensor(), "\", which is no tensor argument"));
  }
  const v1::Argument* tensor = &spec.args(index);
  if (tensor->tensor().shape_size() > 5) {
    return bad(absl::StrCat("maps tensor ", map.tensor(), " of ",
                            tensor->tensor().shape_size(), " dims; a map has at most 5"));
  }
  if (map.box_size() != tensor->tensor().shape_size()) {
    return bad(absl::StrCat("has ", map.box_size(), " box dims; tensor ", map.tensor(),
                            " has ", tensor->tensor().shape_size()));
  }
  for (const std::string& box : map.box()) {
    if (box.empty()) return bad("has an empty box expression");
  }
  return absl::OkStatus();
}

absl::Status CheckArgs(const v1::KernelSpec& spec) {
  bool has_output = false;
  absl::flat_hash_set<std::string> names;  // a tensor map names its tensor by name
  for (const v1::Argument& arg : spec.args()) {
    if (!IsIdentifier(arg.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument name \"", arg.name(), "\" is not an identifier"));
    }
    if (!names.insert(arg.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument name \"", arg.name(), "\" is used twice"));
    }
    if (arg.has_tensor()) {
      const v1::TensorArg& t = arg.tensor();
      if (t.dtype() == v1::DTYPE_UNSPECIFIED) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", arg.name(), " has no dtype"));
      }
      if (t.shape().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", arg.name(), " has no shape"));
      }
      if (t.role() == v1::ROLE_UNSPECIFIED) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", arg.name(), " has no role"));
      }
      has_output |= t.role() != v1::ROLE_IN;
    } else if (arg.has_scalar()) {
      if (arg.scalar().expr().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("scalar argument ", arg.name(), " has no expr"));
      }
    } else if (arg.has_tensor_map()) {
      RETURN_IF_ERROR(CheckTensorMap(spec, arg));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", arg.name(), " is neither a tensor, a scalar nor a tensor map"));
    }
  }
  if (!has_output) {
    return absl::InvalidArgumentError(
        "spec has no output argument (role ROLE_OUT or ROLE_INOUT)");
  }
  return absl::OkStatus();
}

// BACKEND_PYTHON (docs/python-backend.md): `entry` is the build function and
// reference.entry the reference function, both Python identifiers defined
// in the first of `sources` / reference.sources (which default to
// `sources`); every source is a .py file; no launch geometry, no compile
// options and no library reference (the reference is Python code).
absl::Status CheckPythonSpec(const v1::KernelSpec& spec) {
  auto bad = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("BACKEND_PYTHON: ", what));
  };
  if (!IsIdentifier(spec.entry())) {
    return bad(absl::StrCat("entry \"", spec.entry(),
                            "\" must name a Python function (an identifier)"));
  }
  for (const std::string& path : SpecFilePaths(spec)) {
    if (!absl::EndsWith(path, ".py")) {
      return bad(absl::StrCat("source \"", path, "\" is not a .py file"));
    }
  }
  if (!spec.reference().library().empty()) {
    return bad(absl::StrCat("reference.library \"", spec.reference().library(),
                            "\" is a built-in routine of the cuda backend; name a Python "
                            "function in reference.entry instead"));
  }
  if (!IsIdentifier(spec.reference().entry())) {
    return bad(absl::StrCat("reference.entry \"", spec.reference().entry(),
                            "\" must name a Python function (an identifier)"));
  }
  for (const auto& [field, name] : {std::pair{"supply", &spec.reference().supply()},
                                    std::pair{"check", &spec.reference().check()}}) {
    if (!name->empty() && !IsIdentifier(*name)) {
      return bad(absl::StrCat("reference.", field, " \"", *name,
                              "\" must name a Python function (an identifier)"));
    }
  }
  if (!spec.reference().check().empty() && spec.tolerance().skip_check()) {
    return bad("reference.check and tolerance.skip_check both set: a check that never runs");
  }
  if (!spec.compile_options().empty()) {
    return bad("compile_options are not used (the build function decides how to compile)");
  }
  const v1::Launch& launch = spec.launch();
  if (!launch.grid_x().empty() || !launch.grid_y().empty() || !launch.grid_z().empty() ||
      !launch.block_x().empty() || !launch.block_y().empty() || !launch.block_z().empty() ||
      !launch.shared_mem_bytes().empty()) {
    return bad("launch is not used (the callable that build returns launches its kernels)");
  }
  for (const v1::Argument& arg : spec.args()) {
    if (arg.has_scalar()) {
      return bad(absl::StrCat("arg ", arg.name(),
                              ": scalar args are not passed; build(config, shape) receives "
                              "the shape"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

int TensorArgIndex(const v1::KernelSpec& spec, absl::string_view name) {
  for (int i = 0; i < spec.args_size(); ++i) {
    if (spec.args(i).name() == name && spec.args(i).has_tensor()) return i;
  }
  return -1;
}

absl::StatusOr<v1::KernelSpec> ParseKernelSpec(absl::string_view text,
                                               absl::string_view filename) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors(filename);
  parser.RecordErrorsTo(&errors);
  v1::KernelSpec spec;
  if (!parser.ParseFromString(std::string(text), &spec)) {
    return absl::InvalidArgumentError(
        errors.error().empty() ? absl::StrCat(filename, ": cannot parse")
                               : errors.error());
  }
  return spec;
}

std::vector<std::string> SpecFilePaths(const v1::KernelSpec& spec) {
  std::vector<std::string> paths(spec.sources().begin(), spec.sources().end());
  for (const std::string& path : spec.reference().sources()) {
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) {
      paths.push_back(path);
    }
  }
  return paths;
}

absl::StatusOr<KernelBundle> LoadKernelDir(const std::string& dir) {
  const std::string spec_path = absl::StrCat(dir, "/", kSpecFileName);
  ASSIGN_OR_RETURN(std::string text, ReadFile(spec_path));
  KernelBundle bundle;
  ASSIGN_OR_RETURN(bundle.spec, ParseKernelSpec(text, spec_path));
  absl::Status valid = ValidateKernelSpec(bundle.spec);
  if (!valid.ok()) {
    return absl::Status(valid.code(),
                        absl::StrCat(spec_path, ": ", valid.message()));
  }
  for (const std::string& path : SpecFilePaths(bundle.spec)) {
    if (path.empty() || path[0] == '/' || path.find("..") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          spec_path, ": source path \"", path, "\" must stay inside ", dir));
    }
    ASSIGN_OR_RETURN(std::string content, ReadFile(absl::StrCat(dir, "/", path)));
    v1::SourceFile& file = bundle.sources.emplace_back();
    file.set_path(path);
    file.set_digest(Sha256Hex(content));
    file.set_content(std::move(content));
  }
  return bundle;
}

absl::Status ValidateKernelSpec(const v1::KernelSpec& spec) {
  if (!IsIdentifier(spec.name())) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel name \"", spec.name(), "\" is not an identifier"));
  }
  if (spec.backend() == v1::BACKEND_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        "backend is not set (BACKEND_CPU, BACKEND_CUDA or BACKEND_PYTHON)");
  }
  if (!v1::Backend_IsValid(spec.backend())) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown backend ", static_cast<int>(spec.backend())));
  }
  if (spec.entry().empty()) return absl::InvalidArgumentError("entry is not set");
  if (spec.sources().empty()) return absl::InvalidArgumentError("no sources named");
  if (spec.problem().empty()) return absl::InvalidArgumentError("problem names no dims");
  if (spec.params().empty()) return absl::InvalidArgumentError("no params to tune");
  RETURN_IF_ERROR(CheckNames(spec));
  RETURN_IF_ERROR(CheckArgs(spec));
  if (spec.reference().library().empty() && spec.reference().entry().empty()) {
    return absl::InvalidArgumentError(
        "reference names neither a library routine nor an entry");
  }
  if (spec.backend() == v1::BACKEND_PYTHON) {
    RETURN_IF_ERROR(CheckPythonSpec(spec));
  } else if (!spec.reference().supply().empty() || !spec.reference().check().empty() ||
             spec.tolerance().skip_check()) {
    return absl::InvalidArgumentError(
        "reference.supply, reference.check and tolerance.skip_check are Python functions and "
        "options of BACKEND_PYTHON");
  }
  ASSIGN_OR_RETURN(v1::Config def, ParseConfig(spec.default_config()));
  absl::StatusOr<v1::Config> normalized = NormalizeConfig(spec, def);
  if (!normalized.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("default_config: ", normalized.status().message()));
  }
  for (const v1::ConfigSet& set : spec.config_sets()) {
    for (const std::string& text : set.configs()) {
      ASSIGN_OR_RETURN(v1::Config config, ParseConfig(text));
      absl::StatusOr<v1::Config> ok = NormalizeConfig(spec, config);
      if (!ok.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config_sets ", set.name(), ": ", ok.status().message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Shape> NormalizeShape(const v1::KernelSpec& spec,
                                         const v1::Shape& shape) {
  absl::flat_hash_set<std::string> known;
  for (const auto& dim : spec.problem()) known.insert(dim.name());
  const std::string dims =
      absl::StrJoin(spec.problem(), ", ",
                    [](std::string* out, const v1::Dimension& dim) { out->append(dim.name()); });
  for (const auto& dv : shape.dims()) {
    if (!known.contains(dv.name())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape names dim ", dv.name(), ", which kernel ", spec.name(),
          " does not have (its dims: ", dims, ")"));
    }
  }
  v1::Shape out;
  for (const auto& dim : spec.problem()) {
    int count = 0;
    int64_t value = 0;
    for (const auto& dv : shape.dims()) {
      if (dv.name() == dim.name()) ++count, value = dv.value();
    }
    if (count == 0) {
      return absl::InvalidArgumentError(absl::StrCat("shape is missing dim ", dim.name(),
                                                     " of kernel ", spec.name(),
                                                     " (its dims: ", dims, ")"));
    }
    if (count > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape gives dim ", dim.name(), " twice"));
    }
    if (value <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape dim ", dim.name(), "=", value, " must be positive"));
    }
    v1::DimValue* added = out.add_dims();
    added->set_name(dim.name());
    added->set_value(value);
  }
  return out;
}

absl::StatusOr<v1::Config> DefaultConfig(const v1::KernelSpec& spec) {
  ASSIGN_OR_RETURN(v1::Config parsed, ParseConfig(spec.default_config()));
  return NormalizeConfig(spec, parsed);
}

absl::StatusOr<v1::Config> NormalizeConfig(const v1::KernelSpec& spec,
                                           const v1::Config& config) {
  absl::flat_hash_set<std::string> known;
  for (const auto& param : spec.params()) known.insert(param.name());
  for (const auto& pv : config.values()) {
    if (!known.contains(pv.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown param ", pv.name()));
    }
  }
  v1::Config out;
  for (const auto& param : spec.params()) {
    std::optional<int64_t> value = FindParam(config, param.name());
    if (!value.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("param ", param.name(), " has no value"));
    }
    if (std::find(param.values().begin(), param.values().end(), *value) ==
        param.values().end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "param ", param.name(), "=", *value, " is not one of its values"));
    }
    v1::ParamValue* added = out.add_values();
    added->set_name(param.name());
    added->set_value(*value);
  }
  return out;
}

}  // namespace tunefleet
