#include "client/best_table_json.h"

#include <google/protobuf/util/json_util.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "common/config_text.h"
#include "nlohmann/json.hpp"

namespace tunefleet::client_internal {
namespace {

using Json = nlohmann::ordered_json;

// The message as JSON with its proto field names; null when it cannot be.
Json ProtoJson(const google::protobuf::Message& message) {
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(message, &text, options).ok()) return Json();
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// {"M": 1024, ...} of a short form; empty when it does not parse.
template <typename Parsed>
Json ValuesJson(const absl::StatusOr<Parsed>& parsed) {
  Json values = Json::object();
  if (!parsed.ok()) return values;
  if constexpr (std::is_same_v<Parsed, v1::Shape>) {
    for (const v1::DimValue& dim : parsed->dims()) values[dim.name()] = dim.value();
  } else {
    for (const v1::ParamValue& param : parsed->values()) values[param.name()] = param.value();
  }
  return values;
}

Json KernelJson(const v1::ExportedKernel& kernel) {
  const v1::KernelSpec& spec = kernel.spec().kernel();
  Json problem = Json::array();
  for (const v1::Dimension& dim : spec.problem()) problem.push_back(dim.name());
  Json params = Json::array();
  for (const v1::Parameter& param : spec.params()) params.push_back(param.name());
  return {{"name", spec.name()},      {"default_config", spec.default_config()},
          {"problem", problem},       {"params", params},
          {"spec", ProtoJson(kernel.spec())}};
}

Json RowJson(const v1::ExportedBest& row) {
  Json json = {{"kernel", row.kernel_name()},
          {"shape", row.shape()},
          {"dims", ValuesJson(ParseShape(row.shape()))},
          {"device_model", row.device_model()},
          {"toolkit", row.toolkit()},
          {"config", row.config_text()},
          {"values", ValuesJson(ParseConfig(row.config_text()))},
          {"median_seconds", row.median_seconds()},
          {"tuning_key", row.tuning_key()},
          {"job_id", row.job_id()},
          {"updated_unix_ms", row.updated_unix_ms()},
          {"imported", row.imported()},
          {"origin", row.origin()}};
  if (row.has_evidence()) json["evidence"] = ProtoJson(row.evidence());
  return json;
}

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("not a best-config table: ", what));
}

// The member `name` of `object` as T; `required` members must be present.
template <typename T>
absl::Status Read(const Json& object, const char* name, bool required, T* out) {
  auto it = object.find(name);
  if (it == object.end()) {
    return required ? Bad(absl::StrCat("\"", name, "\" is missing")) : absl::OkStatus();
  }
  try {
    *out = it->get<T>();
  } catch (const Json::exception&) {
    return Bad(absl::StrCat("\"", name, "\" has the wrong type"));
  }
  return absl::OkStatus();
}

absl::Status ReadKernel(const Json& json, v1::ExportedKernel* kernel) {
  auto spec = json.find("spec");
  if (!json.is_object() || spec == json.end() || !spec->is_object()) {
    return Bad("each kernel needs a \"spec\" object");
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto parsed = google::protobuf::util::JsonStringToMessage(spec->dump(), kernel->mutable_spec(),
                                                            options);
  if (!parsed.ok()) return Bad(absl::StrCat("a kernel's spec: ", parsed.message().as_string()));
  return absl::OkStatus();
}

absl::Status ReadRow(const Json& json, v1::ExportedBest* row) {
  if (!json.is_object()) return Bad("each config must be an object");
  std::string text;
  double seconds = 0;
  int64_t ms = 0;
  bool imported = false;
  const std::pair<const char*, void (v1::ExportedBest::*)(const std::string&)> strings[] = {
      {"kernel", &v1::ExportedBest::set_kernel_name},
      {"shape", &v1::ExportedBest::set_shape},
      {"device_model", &v1::ExportedBest::set_device_model},
      {"toolkit", &v1::ExportedBest::set_toolkit},
      {"config", &v1::ExportedBest::set_config_text},
      {"tuning_key", &v1::ExportedBest::set_tuning_key},
      {"job_id", &v1::ExportedBest::set_job_id},
      {"origin", &v1::ExportedBest::set_origin}};
  for (const auto& [name, setter] : strings) {
    text.clear();
    const bool required = std::string(name) != "job_id" && std::string(name) != "origin";
    if (absl::Status read = Read(json, name, required, &text); !read.ok()) return read;
    (row->*setter)(text);
  }
  if (absl::Status read = Read(json, "median_seconds", true, &seconds); !read.ok()) return read;
  if (absl::Status read = Read(json, "updated_unix_ms", false, &ms); !read.ok()) return read;
  if (absl::Status read = Read(json, "imported", false, &imported); !read.ok()) return read;
  row->set_median_seconds(seconds);
  row->set_updated_unix_ms(ms);
  row->set_imported(imported);
  auto evidence = json.find("evidence");
  if (evidence != json.end() && evidence->is_object()) {
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    auto parsed = google::protobuf::util::JsonStringToMessage(
        evidence->dump(), row->mutable_evidence(), options);
    if (!parsed.ok()) return Bad(absl::StrCat("a row's evidence: ", parsed.message().as_string()));
  }
  return absl::OkStatus();
}

absl::Status CheckHeader(const Json& json) {
  if (!json.is_object()) return Bad("the document must be a JSON object");
  std::string format;
  int version = 0;
  if (absl::Status read = Read(json, "format", true, &format); !read.ok()) return read;
  if (format != kBestTableFormat) return Bad(absl::StrCat("format is \"", format, "\""));
  if (absl::Status read = Read(json, "version", true, &version); !read.ok()) return read;
  if (version < 1 || version > kBestTableVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "best-config table version ", version, " is not supported (this build reads 1 to ",
        kBestTableVersion, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string BestTableToJson(const v1::ExportBestResponse& table) {
  Json kernels = Json::array();
  for (const v1::ExportedKernel& kernel : table.kernels()) kernels.push_back(KernelJson(kernel));
  Json configs = Json::array();
  for (const v1::ExportedBest& row : table.rows()) configs.push_back(RowJson(row));
  Json document = {{"format", kBestTableFormat},
                   {"version", kBestTableVersion},
                   {"exported_unix_ms", table.exported_unix_ms()},
                   {"exported_by", absl::StrCat("tunefleet-coordinator ",
                                                table.coordinator_version())},
                   {"kernels", std::move(kernels)},
                   {"configs", std::move(configs)}};
  return document.dump(2, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace) + "\n";
}

absl::StatusOr<v1::ExportBestResponse> BestTableFromJson(const std::string& text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Bad("the text is not JSON");
  if (absl::Status header = CheckHeader(json); !header.ok()) return header;
  v1::ExportBestResponse table;
  int64_t exported = 0;
  if (absl::Status read = Read(json, "exported_unix_ms", false, &exported); !read.ok()) return read;
  table.set_exported_unix_ms(exported);
  const Json kernels = json.value("kernels", Json::array());
  const Json configs = json.value("configs", Json::array());
  if (!kernels.is_array() || !configs.is_array()) return Bad("kernels and configs must be arrays");
  for (const Json& kernel : kernels) {
    if (absl::Status read = ReadKernel(kernel, table.add_kernels()); !read.ok()) return read;
  }
  for (const Json& row : configs) {
    if (absl::Status read = ReadRow(row, table.add_rows()); !read.ok()) return read;
  }
  return table;
}

}  // namespace tunefleet::client_internal
