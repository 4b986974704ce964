#include "client/tunectl/yaml.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

using Json = nlohmann::ordered_json;

bool IsEmptyContainer(const Json& value) {
  return (value.is_object() || value.is_array()) && value.empty();
}

// Scalars and empty containers in JSON's own spelling, valid YAML flow style.
std::string Scalar(const Json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

void Append(const Json& value, int indent, std::string* out);

// `prefix` (a key with its colon, or a dash) followed by `value`.
void AppendEntry(const std::string& prefix, const Json& value, int indent, std::string* out) {
  const std::string pad(indent, ' ');
  if (value.is_structured() && !IsEmptyContainer(value)) {
    absl::StrAppend(out, pad, prefix, "\n");
    Append(value, indent + 2, out);
  } else {
    absl::StrAppend(out, pad, prefix, " ", Scalar(value), "\n");
  }
}

void Append(const Json& value, int indent, std::string* out) {
  if (value.is_object()) {
    for (const auto& [key, member] : value.items()) {
      AppendEntry(absl::StrCat(Scalar(Json(key)), ":"), member, indent, out);
    }
  } else if (value.is_array()) {
    for (const Json& item : value) AppendEntry("-", item, indent, out);
  } else {
    absl::StrAppend(out, std::string(indent, ' '), Scalar(value), "\n");
  }
}

}  // namespace

absl::StatusOr<std::string> JsonToYaml(const std::string& json_text) {
  Json json = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError("not a JSON document");
  if (IsEmptyContainer(json)) return Scalar(json) + "\n";
  std::string out;
  Append(json, 0, &out);
  return out;
}

}  // namespace tunefleet::tunectl
