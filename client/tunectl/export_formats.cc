#include "client/tunectl/export_formats.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "client/best_table_json.h"
#include "client/tunectl/format.h"
#include "common/config_text.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

using Json = nlohmann::ordered_json;
using client_internal::kBestTableFormat;
using client_internal::kBestTableVersion;

constexpr char kTritonFormat[] = "tunefleet.triton_autotune";
constexpr int kTritonVersion = 1;
constexpr char kT4SchemaVersion[] = "1.0.0";

constexpr std::pair<TableFormat, const char*> kFormatNames[] = {
    {TableFormat::kTunefleet, "tunefleet"},
    {TableFormat::kVllm, "vllm"},
    {TableFormat::kT4, "t4"},
    {TableFormat::kTriton, "triton"}};

// Params that Triton takes as launch options (triton.Config's num_warps and
// num_stages) rather than as the kernel's constexpr kwargs.
bool IsTritonLaunchOption(absl::string_view param) {
  return param == "num_warps" || param == "num_stages";
}

// The member `name` of `object`; null when `object` is no object or lacks
// it. (nlohmann's value() throws on a member of another type.)
const Json& Member(const Json& object, const char* name) {
  static const Json* const kNull = new Json();
  if (!object.is_object()) return *kNull;
  auto it = object.find(name);
  return it == object.end() ? *kNull : *it;
}

std::string StringMember(const Json& object, const char* name) {
  const Json& member = Member(object, name);
  return member.is_string() ? member.get<std::string>() : std::string();
}

// The table as both its JSON document (for the members a format copies as
// they are) and its typed rows: parsed.rows(i) is document["configs"][i].
struct Table {
  Json document;
  v1::ExportBestResponse parsed;
};

absl::StatusOr<Table> ParseTable(const std::string& text) {
  ASSIGN_OR_RETURN(v1::ExportBestResponse parsed, client_internal::BestTableFromJson(text));
  return Table{Json::parse(text, nullptr, /*allow_exceptions=*/false), std::move(parsed)};
}

// --- selecting rows ----------------------------------------------------------

absl::StatusOr<NameValues> ParseWhere(const std::string& where, const Table& table) {
  ASSIGN_OR_RETURN(NameValues wanted, ParseNameValues(where));
  std::set<std::string> dims;
  for (const v1::ExportedKernel& kernel : table.parsed.kernels()) {
    for (const v1::Dimension& dim : kernel.spec().kernel().problem()) dims.insert(dim.name());
  }
  for (const auto& [name, value] : wanted) {
    if (!dims.empty() && !dims.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat("--where names dim ", name,
                                                     ", which the kernel does not have (its "
                                                     "dims: ", absl::StrJoin(dims, ", "), ")"));
    }
  }
  return wanted;
}

bool Selected(const v1::ExportedBest& row, const ExportOptions& options, const NameValues& where) {
  if (!options.device_model.empty() && row.device_model() != options.device_model) return false;
  if (!options.toolkit.empty() && row.toolkit() != options.toolkit) return false;
  if (where.empty()) return true;
  absl::StatusOr<v1::Shape> shape = ParseShape(row.shape());
  if (!shape.ok()) return false;
  return std::all_of(where.begin(), where.end(), [&](const auto& wanted) {
    return FindDim(*shape, wanted.first) == wanted.second;
  });
}

// The indices of the rows `options` selects, in the table's order.
absl::StatusOr<std::vector<int>> SelectRows(const Table& table, const ExportOptions& options) {
  ASSIGN_OR_RETURN(NameValues where, ParseWhere(options.where, table));
  std::vector<int> rows;
  for (int i = 0; i < table.parsed.rows_size(); ++i) {
    if (Selected(table.parsed.rows(i), options, where)) rows.push_back(i);
  }
  return rows;
}

// "\"a\", \"b\"".
std::string Quoted(const std::set<std::string>& names) {
  return absl::StrJoin(names, ", ", [](std::string* out, const std::string& name) {
    absl::StrAppend(out, "\"", name, "\"");
  });
}

// The one (device model, toolkit) of `rows`: a vLLM or Triton file is read
// on one device, and one row per shape must remain.
absl::StatusOr<std::pair<std::string, std::string>> OneDevice(const Table& table,
                                                              const std::vector<int>& rows) {
  std::set<std::string> models;
  std::set<std::string> toolkits;
  for (int i : rows) {
    models.insert(table.parsed.rows(i).device_model());
    toolkits.insert(table.parsed.rows(i).toolkit());
  }
  if (models.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("the rows are of ", models.size(),
                                                   " device models (", Quoted(models),
                                                   "): choose one with --device"));
  }
  if (toolkits.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("the rows are of ", toolkits.size(),
                                                   " toolkits (", Quoted(toolkits),
                                                   "): choose one with --toolkit"));
  }
  if (rows.empty()) return absl::NotFoundError("no best config matches the selection");
  return std::make_pair(*models.begin(), *toolkits.begin());
}

// One device model and toolkit have one best per shape; a table that has
// two was not written by a coordinator.
absl::Status TwoRowsOf(const std::string& shape) {
  return absl::InvalidArgumentError(absl::StrCat("two rows of shape ", shape,
                                                 " on one device model and toolkit"));
}

absl::StatusOr<const v1::KernelSpec*> OnlyKernel(const Table& table, TableFormat format) {
  if (table.parsed.kernels_size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", TableFormatName(format), " file holds one kernel; the table has ",
                     table.parsed.kernels_size()));
  }
  return &table.parsed.kernels(0).spec().kernel();
}

// --- tunefleet ---------------------------------------------------------------

std::string FileStem(const Table& table) {
  return table.parsed.kernels_size() == 1 ? table.parsed.kernels(0).spec().kernel().name()
                                          : std::string("tunefleet");
}

ExportedDocument TunefleetDocument(const Table& table, const std::vector<int>& rows) {
  Json document = table.document;
  Json configs = Json::array();
  for (int i : rows) configs.push_back(table.document["configs"][i]);
  document["configs"] = std::move(configs);
  return {absl::StrCat(FileStem(table), ".best.json"), JsonDocument(document)};
}

// --- vllm --------------------------------------------------------------------

Json ValuesObject(const v1::Config& config) {
  Json values = Json::object();
  for (const v1::ParamValue& param : config.values()) values[param.name()] = param.value();
  return values;
}

absl::Status CheckBatchDim(const v1::KernelSpec& spec, const std::string& batch_dim) {
  std::vector<std::string> dims;
  for (const v1::Dimension& dim : spec.problem()) {
    if (dim.name() == batch_dim) return absl::OkStatus();
    dims.push_back(dim.name());
  }
  return absl::InvalidArgumentError(absl::StrCat("--batch-dim ", batch_dim, " is not a dim of ",
                                                 spec.name(), " (its dims: ",
                                                 absl::StrJoin(dims, ", "), ")"));
}

// OK when each dim of `others` has one value; else names every dim with
// several, and the --where that would pick the first of each.
absl::Status CheckOneValueEach(const std::map<std::string, std::set<int64_t>>& others,
                               const std::string& batch_dim) {
  std::vector<std::string> differing;
  std::vector<std::string> example;
  for (const auto& [dim, values] : others) {
    if (values.size() < 2) continue;
    differing.push_back(absl::StrCat(dim, " (", absl::StrJoin(values, ", "), ")"));
    example.push_back(absl::StrCat(dim, "=", *values.begin()));
  }
  if (differing.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "a vllm file varies only the batch dim ", batch_dim, "; the rows also differ in ",
      absl::StrJoin(differing, ", "), ": choose one value of each with --where, e.g. --where ",
      absl::StrJoin(example, ",")));
}

// "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json": the dims but the
// batch dim in spec order, as vLLM's get_config_file_name names them.
std::string VllmFileName(const v1::KernelSpec& spec,
                         const std::map<std::string, std::set<int64_t>>& others,
                         const std::string& device_model) {
  std::string name;
  for (const v1::Dimension& dim : spec.problem()) {
    auto values = others.find(dim.name());
    if (values == others.end() || values->second.empty()) continue;
    absl::StrAppend(&name, dim.name(), "=", *values->second.begin(), ",");
  }
  return absl::StrCat(name, "device_name=", VllmDeviceName(device_model), ".json");
}

absl::StatusOr<ExportedDocument> VllmDocument(const Table& table, const std::vector<int>& rows,
                                              const ExportOptions& options) {
  ASSIGN_OR_RETURN(const v1::KernelSpec* spec, OnlyKernel(table, TableFormat::kVllm));
  RETURN_IF_ERROR(CheckBatchDim(*spec, options.batch_dim));
  ASSIGN_OR_RETURN(auto device, OneDevice(table, rows));
  std::map<int64_t, Json> by_batch;  // vLLM picks the nearest key: write them in order
  std::map<std::string, std::set<int64_t>> others;
  std::string repeated;  // a shape of two rows, told after the dims that differ
  for (int i : rows) {
    const v1::ExportedBest& row = table.parsed.rows(i);
    ASSIGN_OR_RETURN(v1::Shape shape, ParseShape(row.shape()));
    ASSIGN_OR_RETURN(v1::Config config, ParseConfig(row.config_text()));
    std::optional<int64_t> batch;
    for (const v1::DimValue& dim : shape.dims()) {
      if (dim.name() == options.batch_dim) {
        batch = dim.value();
      } else {
        others[dim.name()].insert(dim.value());
      }
    }
    if (!batch.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("row ", row.shape(), " has no batch dim ", options.batch_dim));
    }
    if (!by_batch.emplace(*batch, ValuesObject(config)).second) repeated = row.shape();
  }
  RETURN_IF_ERROR(CheckOneValueEach(others, options.batch_dim));
  if (!repeated.empty()) return TwoRowsOf(repeated);
  Json document = Json::object();
  for (auto& [batch, config] : by_batch) document[absl::StrCat(batch)] = std::move(config);
  return ExportedDocument{VllmFileName(*spec, others, device.first), JsonDocument(document)};
}

// --- triton ------------------------------------------------------------------

// {"kwargs": {...}, "num_warps": 4, "num_stages": 3}: a triton.Config's
// fields; the launch options only when the config has them.
Json TritonConfig(const v1::Config& config) {
  Json entry = {{"kwargs", Json::object()}};
  for (const v1::ParamValue& param : config.values()) {
    if (IsTritonLaunchOption(param.name())) {
      entry[param.name()] = param.value();
    } else {
      entry["kwargs"][param.name()] = param.value();
    }
  }
  return entry;
}

// "512,512,256": the shape's values in the spec's dim order, Triton's cache
// key (the `key` arguments' values) as text.
absl::StatusOr<std::string> TritonKey(const v1::KernelSpec& spec, const std::string& shape_text) {
  ASSIGN_OR_RETURN(v1::Shape shape, ParseShape(shape_text));
  std::vector<int64_t> values;
  for (const v1::Dimension& dim : spec.problem()) {
    std::optional<int64_t> value = FindDim(shape, dim.name());
    if (!value.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("row ", shape_text, " lacks dim ", dim.name()));
    }
    values.push_back(*value);
  }
  return absl::StrJoin(values, ",");
}

absl::StatusOr<ExportedDocument> TritonDocument(const Table& table, const std::vector<int>& rows) {
  ASSIGN_OR_RETURN(const v1::KernelSpec* spec, OnlyKernel(table, TableFormat::kTriton));
  ASSIGN_OR_RETURN(auto device, OneDevice(table, rows));
  Json key = Json::array();
  for (const v1::Dimension& dim : spec->problem()) key.push_back(dim.name());
  Json cache = Json::object();
  for (int i : rows) {
    const v1::ExportedBest& row = table.parsed.rows(i);
    ASSIGN_OR_RETURN(std::string cache_key, TritonKey(*spec, row.shape()));
    ASSIGN_OR_RETURN(v1::Config config, ParseConfig(row.config_text()));
    if (cache.contains(cache_key)) return TwoRowsOf(row.shape());
    Json entry = TritonConfig(config);
    entry["median_seconds"] = row.median_seconds();
    cache[cache_key] = std::move(entry);
  }
  ASSIGN_OR_RETURN(v1::Config default_config, ParseConfig(spec->default_config()));
  Json document = {{"format", kTritonFormat},
                   {"version", kTritonVersion},
                   {"kernel", spec->name()},
                   {"key", std::move(key)},
                   {"device_model", device.first},
                   {"toolkit", device.second},
                   {"exported_unix_ms", table.parsed.exported_unix_ms()},
                   {"default", TritonConfig(default_config)},
                   {"cache", std::move(cache)}};
  return ExportedDocument{
      absl::StrCat(spec->name(), ",device_name=", VllmDeviceName(device.first), ".autotune.json"),
      JsonDocument(document)};
}

// --- t4 ----------------------------------------------------------------------

// A row's members a T4 result carries in its "metadata", as the row has them.
constexpr const char* kT4RowMembers[] = {
    "kernel", "shape", "dims", "device_model", "toolkit", "tuning_key",
    "job_id", "imported", "origin", "evidence"};

std::string Rfc3339(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

Json T4Result(const v1::ExportedBest& row, const Json& row_json) {
  Json metadata = Json::object();
  for (const char* name : kT4RowMembers) {
    if (row_json.contains(name)) metadata[name] = row_json[name];
  }
  absl::StatusOr<v1::Config> config = ParseConfig(row.config_text());
  Json time = {{"name", "time"}, {"value", row.median_seconds() * 1e3}, {"unit", "ms"}};
  return {{"timestamp", Rfc3339(row.updated_unix_ms())},
          {"configuration", config.ok() ? ValuesObject(*config) : Json::object()},
          {"times", Json::object()},
          {"invalidity", "correct"},
          {"correctness", 1},
          {"measurements", Json::array({std::move(time)})},
          {"objectives", Json::array({"time"})},
          {"metadata", std::move(metadata)}};
}

Json KernelsOf(const Json& document) {
  const Json& kernels = Member(document, "kernels");
  return kernels.is_array() ? kernels : Json::array();
}

ExportedDocument T4Document(const Table& table, const std::vector<int>& rows) {
  Json results = Json::array();
  for (int i : rows) {
    results.push_back(T4Result(table.parsed.rows(i), table.document["configs"][i]));
  }
  Json tunefleet = {{"format", kBestTableFormat},
                    {"version", kBestTableVersion},
                    {"exported_unix_ms", table.parsed.exported_unix_ms()},
                    {"exported_by", StringMember(table.document, "exported_by")},
                    {"kernels", KernelsOf(table.document)}};
  Json document = {{"schema_version", kT4SchemaVersion},
                   {"metadata", {{"tunefleet", std::move(tunefleet)}}},
                   {"results", std::move(results)}};
  return {absl::StrCat(FileStem(table), ".t4.json"), JsonDocument(document)};
}

absl::Status BadT4(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("not a T4 document tunectl can import: ", what));
}

// Seconds per unit of a T4 "time" measurement.
std::optional<double> SecondsPer(const std::string& unit) {
  if (unit == "s") return 1.0;
  if (unit == "ms") return 1e-3;
  if (unit == "us") return 1e-6;
  if (unit == "ns") return 1e-9;
  return std::nullopt;
}

absl::StatusOr<double> T4Seconds(const Json& result) {
  const Json& measurements = Member(result, "measurements");
  if (!measurements.is_array()) return BadT4("a result has no \"measurements\" array");
  for (const Json& measurement : measurements) {
    if (StringMember(measurement, "name") != "time") continue;
    const Json& value = Member(measurement, "value");
    std::optional<double> scale = SecondsPer(StringMember(measurement, "unit"));
    if (!value.is_number() || !scale.has_value()) {
      return BadT4("the \"time\" measurement needs a number and a unit of s, ms, us or ns");
    }
    return value.get<double>() * *scale;
  }
  return BadT4("a result has no \"time\" measurement");
}

absl::StatusOr<int64_t> T4UnixMs(const Json& result) {
  const Json& timestamp = Member(result, "timestamp");
  if (timestamp.is_null()) return 0;
  absl::Time time;
  std::string error;
  if (!timestamp.is_string() ||
      !absl::ParseTime(absl::RFC3339_full, timestamp.get<std::string>(), &time, &error)) {
    return BadT4(absl::StrCat("a result's \"timestamp\" is not RFC 3339 ", error));
  }
  return absl::ToUnixMillis(time);
}

// The configuration as short-form text, params in `order` first (the
// kernel's spec order), then any others in the document's order.
absl::StatusOr<std::string> T4Config(const Json& configuration,
                                     const std::vector<std::string>& order) {
  if (!configuration.is_object() || configuration.empty()) {
    return BadT4("a result's \"configuration\" must be an object of params");
  }
  NameValues values;
  std::set<std::string> seen;
  auto add = [&](const std::string& name, const Json& value) -> absl::Status {
    if (!value.is_number_integer()) {
      return BadT4(absl::StrCat("configuration param ", name, " is not an integer"));
    }
    values.emplace_back(name, value.get<int64_t>());
    seen.insert(name);
    return absl::OkStatus();
  };
  for (const std::string& name : order) {
    auto it = configuration.find(name);
    if (it != configuration.end()) RETURN_IF_ERROR(add(name, *it));
  }
  for (const auto& [name, value] : configuration.items()) {
    if (!seen.contains(name)) RETURN_IF_ERROR(add(name, value));
  }
  return FormatNameValues(values);
}

using ParamOrders = std::map<std::string, std::vector<std::string>>;  // by kernel name

ParamOrders ParamOrdersOf(const Json& kernels) {
  ParamOrders orders;
  if (!kernels.is_array()) return orders;
  for (const Json& kernel : kernels) {
    const Json& params = Member(kernel, "params");
    if (!params.is_array()) continue;
    std::vector<std::string>& order = orders[StringMember(kernel, "name")];
    for (const Json& param : params) {
      if (param.is_string()) order.push_back(param.get<std::string>());
    }
  }
  return orders;
}

constexpr const char* kT4RequiredMembers[] = {"kernel", "shape", "device_model", "toolkit",
                                              "tuning_key"};

absl::StatusOr<Json> T4Row(const Json& result, const ParamOrders& orders) {
  if (!result.is_object()) return BadT4("each result must be an object");
  const Json& invalidity = Member(result, "invalidity");
  if (!invalidity.is_null() && invalidity != "correct") {
    return BadT4(absl::StrCat("a result's invalidity is ", invalidity.dump(),
                              ": only correct configs are best configs"));
  }
  const Json& metadata = Member(result, "metadata");
  for (const char* name : kT4RequiredMembers) {
    if (!Member(metadata, name).is_string()) {
      return BadT4(absl::StrCat("each result needs the string metadata.", name,
                                " (tunectl export writes it)"));
    }
  }
  auto order = orders.find(StringMember(metadata, "kernel"));
  ASSIGN_OR_RETURN(std::string config,
                   T4Config(Member(result, "configuration"),
                            order == orders.end() ? std::vector<std::string>() : order->second));
  ASSIGN_OR_RETURN(double seconds, T4Seconds(result));
  ASSIGN_OR_RETURN(int64_t unix_ms, T4UnixMs(result));
  Json row = Json::object();
  for (const char* name : kT4RowMembers) {
    if (metadata.contains(name)) row[name] = metadata[name];
  }
  row["config"] = config;
  row["values"] = Member(result, "configuration");
  row["median_seconds"] = seconds;
  row["updated_unix_ms"] = unix_ms;
  return row;
}

absl::StatusOr<std::string> T4ToTunefleet(const std::string& text) {
  const Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) return BadT4("not a JSON object");
  if (!absl::StartsWith(StringMember(document, "schema_version"), "1.")) {
    return BadT4("\"schema_version\" must be 1.x.y");
  }
  const Json& tunefleet = Member(Member(document, "metadata"), "tunefleet");
  if (!tunefleet.is_object()) {
    return BadT4("metadata.tunefleet is missing: it carries the kernels' specs (tunectl export "
                 "writes it)");
  }
  const Json& results = Member(document, "results");
  if (!results.is_array()) return BadT4("\"results\" must be an array");
  const ParamOrders orders = ParamOrdersOf(Member(tunefleet, "kernels"));
  Json configs = Json::array();
  for (const Json& result : results) {
    ASSIGN_OR_RETURN(Json row, T4Row(result, orders));
    configs.push_back(std::move(row));
  }
  const Json& exported = Member(tunefleet, "exported_unix_ms");
  Json table = {{"format", kBestTableFormat},
                {"version", kBestTableVersion},
                {"exported_unix_ms", exported.is_number_integer() ? exported : Json(0)},
                {"exported_by", StringMember(tunefleet, "exported_by")},
                {"kernels", KernelsOf(tunefleet)},
                {"configs", std::move(configs)}};
  std::string out = JsonDocument(table);
  RETURN_IF_ERROR(client_internal::BestTableFromJson(out).status());
  return out;
}

}  // namespace

const char* TableFormatName(TableFormat format) {
  for (const auto& [known, name] : kFormatNames) {
    if (known == format) return name;
  }
  return "";
}

absl::StatusOr<TableFormat> ParseTableFormat(absl::string_view name) {
  std::vector<std::string> names;
  for (const auto& [format, known] : kFormatNames) {
    if (name == known) return format;
    names.push_back(known);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown format \"", name,
                                                 "\": the formats are ",
                                                 absl::StrJoin(names, ", ")));
}

absl::StatusOr<TableFormat> ParseImportFormat(absl::string_view name) {
  ASSIGN_OR_RETURN(TableFormat format, ParseTableFormat(name));
  switch (format) {
    case TableFormat::kVllm:
      return absl::InvalidArgumentError(
          "a vllm file cannot be imported: it holds configs by batch size only, without the "
          "toolkit, the times or the tuning keys (import reads tunefleet and t4)");
    case TableFormat::kTriton:
      return absl::InvalidArgumentError(
          "a triton file cannot be imported: it holds neither the tuning keys nor the "
          "kernel's spec (import reads tunefleet and t4)");
    default:
      return format;
  }
}

absl::StatusOr<ExportedDocument> ConvertTable(const std::string& table_json,
                                              const ExportOptions& options) {
  ASSIGN_OR_RETURN(Table table, ParseTable(table_json));
  ASSIGN_OR_RETURN(std::vector<int> rows, SelectRows(table, options));
  switch (options.format) {
    case TableFormat::kVllm:
      return VllmDocument(table, rows, options);
    case TableFormat::kT4:
      return T4Document(table, rows);
    case TableFormat::kTriton:
      return TritonDocument(table, rows);
    case TableFormat::kTunefleet:
      break;
  }
  return TunefleetDocument(table, rows);
}

absl::StatusOr<std::string> ToTunefleetTable(TableFormat format, const std::string& text) {
  RETURN_IF_ERROR(ParseImportFormat(TableFormatName(format)).status());
  if (format == TableFormat::kT4) return T4ToTunefleet(text);
  RETURN_IF_ERROR(client_internal::BestTableFromJson(text).status());
  return text;
}

std::string VllmDeviceName(const std::string& device_model) {
  absl::string_view name = device_model;
  const size_t space = name.rfind(' ');
  if (space != absl::string_view::npos) {
    absl::string_view last = name.substr(space + 1);  // "sm_90" or "(sm_90)"
    if (absl::ConsumePrefix(&last, "(") && !absl::ConsumeSuffix(&last, ")")) last = "";
    if (absl::ConsumePrefix(&last, "sm_") && !last.empty() &&
        std::all_of(last.begin(), last.end(), absl::ascii_isdigit)) {
      name = name.substr(0, space);
    }
  }
  return absl::StrReplaceAll(name, {{" ", "_"}});
}

}  // namespace tunefleet::tunectl
