#include "client/tunectl/validate.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "client/tunectl/format.h"
#include "client/tunectl/spec_locator.h"
#include "common/compile_options.h"
#include "common/config_space.h"
#include "common/config_text.h"
#include "common/file_util.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

// Places a spec problem at its file and, where it can be found, its line.
absl::Status AtSpec(const std::string& spec_path, absl::string_view text,
                    const absl::Status& status) {
  absl::string_view message = status.message();
  absl::ConsumePrefix(&message, absl::StrCat(spec_path, ": "));
  std::optional<int> line = LocateSpecProblem(text, message);
  std::string where = line ? absl::StrCat(spec_path, ":", *line) : spec_path;
  return absl::Status(status.code(), absl::StrCat(where, ": ", message));
}

// Every dim 1: enough to compile the expressions when no shape is given.
v1::Shape PlaceholderShape(const v1::KernelSpec& spec) {
  v1::Shape shape;
  for (const v1::Dimension& dim : spec.problem()) {
    v1::DimValue* value = shape.add_dims();
    value->set_name(dim.name());
    value->set_value(1);
  }
  return shape;
}

absl::StatusOr<v1::Shape> ShapeFor(const v1::KernelSpec& spec,
                                   const std::string& text) {
  absl::StatusOr<v1::Shape> shape = ParseShape(text);
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape: ", shape.status().message()));
  }
  return NormalizeShape(spec, *shape);  // its messages name the shape
}

std::optional<uint64_t> CountValid(ConfigSpace& space) {
  if (space.full_size() > kMaxCountedConfigs) return std::nullopt;
  ConfigEnumerator configs(&space);
  uint64_t count = 0;
  for (uint64_t ordinal = 0; configs.Next(&ordinal);) ++count;
  return count;
}

// The constraint the spec's default config breaks, or "" (ValidateKernelSpec
// already checked that it names listed values).
std::string DefaultProblem(ConfigSpace& space) {
  absl::StatusOr<v1::Config> config =
      ParseConfig(space.spec().default_config());
  if (config.ok()) config = NormalizeConfig(space.spec(), *config);
  absl::Status status = config.status();
  if (status.ok()) status = space.Bind(*config);
  if (status.ok()) status = space.CheckConstraints();
  return std::string(status.message());
}

void Describe(const KernelBundle& bundle, const ConfigSpace& space,
              ValidateReport* report) {
  const v1::KernelSpec& spec = bundle.spec;
  report->kernel = spec.name();
  report->backend = std::string(
      absl::StripPrefix(v1::Backend_Name(spec.backend()), "BACKEND_"));
  report->parameters = spec.params_size();
  report->full_size = space.full_size();
  report->source_files = static_cast<int>(bundle.sources.size());
  for (const v1::SourceFile& file : bundle.sources) {
    report->source_bytes += static_cast<int64_t>(file.content().size());
  }
  report->default_config = spec.default_config();
  for (const v1::ConfigSet& set : spec.config_sets()) {
    report->config_sets.emplace_back(set.name(), set.configs_size());
  }
}

}  // namespace

absl::StatusOr<ValidateReport> ValidateKernelDirectory(
    const std::string& dir, const std::string& shape) {
  ValidateReport report;
  report.spec_path = absl::StrCat(dir, "/", kSpecFileName);
  ASSIGN_OR_RETURN(std::string text, ReadFile(report.spec_path));
  // Parse errors already read "<file>:<line>:<column>: ...".
  ASSIGN_OR_RETURN(v1::KernelSpec spec,
                   ParseKernelSpec(text, report.spec_path));
  if (absl::Status valid = ValidateKernelSpec(spec); !valid.ok()) {
    return AtSpec(report.spec_path, text, valid);
  }
  if (absl::Status allowed = CheckCompileOptions(spec.backend(), spec.compile_options());
      !allowed.ok()) {
    return AtSpec(report.spec_path, text, allowed);
  }
  absl::StatusOr<KernelBundle> bundle = LoadKernelDir(dir);
  if (!bundle.ok()) return AtSpec(report.spec_path, text, bundle.status());
  v1::Shape dims = PlaceholderShape(spec);
  if (!shape.empty()) {
    ASSIGN_OR_RETURN(dims, ShapeFor(spec, shape));
  }
  absl::StatusOr<std::unique_ptr<ConfigSpace>> space =
      ConfigSpace::Create(spec, dims, PlaceholderLimits(spec.backend()));
  if (!space.ok()) return AtSpec(report.spec_path, text, space.status());
  Describe(*bundle, **space, &report);
  if (!shape.empty()) {
    report.shape = ShapeToString(dims);
    report.valid_configs = CountValid(**space);
    report.default_problem = DefaultProblem(**space);
  }
  return report;
}

std::string ValidateReportText(const ValidateReport& report) {
  std::vector<std::string> sets;
  for (const auto& [name, count] : report.config_sets) {
    sets.push_back(absl::StrCat(name, " (", count, ")"));
  }
  std::vector<Row> rows = {
      {"spec", absl::StrCat(report.spec_path, "  ok")},
      {"kernel", absl::StrCat(report.kernel, " (", report.backend, ")")},
      {"sources", absl::StrFormat("%d files, %d bytes", report.source_files,
                                  report.source_bytes)},
      {"parameters", absl::StrCat(report.parameters)},
      {"full space", absl::StrCat(report.full_size, " configs")},
      {"config sets", sets.empty() ? "-" : absl::StrJoin(sets, ", ")},
      {"default", report.default_config}};
  std::string valid;
  if (report.shape.empty()) {
    valid =
        "not counted: constraints depend on the problem shape; pass --shape";
  } else if (!report.valid_configs.has_value()) {
    valid = absl::StrCat("not counted: the space exceeds ", kMaxCountedConfigs,
                         " configs");
  } else {
    valid = absl::StrCat(*report.valid_configs, " of ", report.full_size,
                         " for ", report.shape, " (placeholder ",
                         report.backend, " limits)");
  }
  rows.push_back({"valid configs", valid});
  if (!report.default_problem.empty()) {
    rows.push_back(
        {"warning", absl::StrCat("default config is invalid for this "
                                 "shape: ",
                                 report.default_problem)});
  }
  return RenderTable(/*header=*/{}, rows);
}

std::string ValidateReportJson(const ValidateReport& report) {
  using Json = nlohmann::ordered_json;
  // Above int64's range (a saturated size) it is written as a double, as
  // before, not as an exact unsigned integer.
  Json full_size = report.full_size > static_cast<uint64_t>(
                                          std::numeric_limits<int64_t>::max())
                       ? Json(static_cast<double>(report.full_size))
                       : Json(static_cast<int64_t>(report.full_size));
  Json config_sets = Json::array();
  for (const auto& [name, count] : report.config_sets) {
    config_sets.push_back({{"name", name}, {"configs", count}});
  }
  Json valid_configs = report.valid_configs.has_value()
                           ? Json(static_cast<int64_t>(*report.valid_configs))
                           : Json(nullptr);
  return JsonDocument({{"spec", report.spec_path},
                       {"kernel", report.kernel},
                       {"backend", report.backend},
                       {"parameters", report.parameters},
                       {"full_size", std::move(full_size)},
                       {"source_files", report.source_files},
                       {"source_bytes", report.source_bytes},
                       {"default_config", report.default_config},
                       {"config_sets", std::move(config_sets)},
                       {"shape", report.shape},
                       {"valid_configs", std::move(valid_configs)},
                       {"default_problem", report.default_problem}});
}

}  // namespace tunefleet::tunectl
