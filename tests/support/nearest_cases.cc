#include "tests/support/nearest_cases.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/spec_loader.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_support.h"

namespace tunefleet::testing {
namespace {

using Json = nlohmann::json;

absl::StatusOr<Json> ReadCases() {
  const std::string path = SourceDir() + "/tests/data/nearest_fallback.json";
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << file.rdbuf();
  Json json = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, " is not JSON"));
  return json;
}

absl::StatusOr<v1::JobSpec> SpecOf(const Json& kernel) {
  v1::JobSpec spec;
  if (kernel.contains("dir")) {
    ASSIGN_OR_RETURN(KernelBundle bundle,
                     LoadKernelDir(SourceDir() + "/" + kernel["dir"].get<std::string>()));
    *spec.mutable_kernel() = bundle.spec;
    for (const v1::SourceFile& file : bundle.sources) *spec.add_sources() = file;
    return spec;
  }
  if (!google::protobuf::util::JsonStringToMessage(kernel["spec"].dump(), spec.mutable_kernel())
           .ok()) {
    return absl::InvalidArgumentError("a case kernel's spec is not a KernelSpec");
  }
  return spec;
}

// A value of the file: a number, or "nan" / "inf" / "-inf".
double Number(const Json& value) {
  return value.is_string() ? std::stod(value.get<std::string>()) : value.get<double>();
}

}  // namespace

std::string NearestCase::ServedRow(
    const std::function<std::string(const NearestRow&)>& key_of) const {
  if (!row.empty()) return row;
  std::string served;
  for (const std::string& id : smallest_key_of) {
    if (served.empty() || key_of(Row(id)) < key_of(Row(served))) served = id;
  }
  return served;
}

const NearestRow& NearestCase::Row(const std::string& id) const {
  return *std::find_if(rows.begin(), rows.end(), [&](const NearestRow& r) { return r.id == id; });
}

absl::StatusOr<std::vector<NearestCase>> LoadNearestCases() {
  ASSIGN_OR_RETURN(Json json, ReadCases());
  std::vector<NearestCase> cases;
  try {
    for (const Json& item : json["cases"]) {
      NearestCase& c = cases.emplace_back();
      c.name = item["name"].get<std::string>();
      ASSIGN_OR_RETURN(c.spec, SpecOf(json["kernels"][item["kernel"].get<std::string>()]));
      for (const Json& row : item["rows"]) {
        auto text = [&](const char* name) { return row[name].get<std::string>(); };
        c.rows.push_back({text("id"), text("shape"), text("config"), text("device_model"),
                          text("toolkit")});
      }
      const Json& query = item["query"];
      c.shape = query["shape"].get<std::string>();
      c.device_model = query["device_model"].get<std::string>();
      c.toolkit = query["toolkit"].get<std::string>();
      const Json& want = item["want"];
      c.tier = want["tier"].get<std::string>();
      c.row = want.value("row", "");
      c.smallest_key_of = want.value("smallest_key_of", std::vector<std::string>());
      c.config = want.value("config", "");
    }
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("nearest_fallback.json: ", e.what()));
  }
  return cases;
}

absl::StatusOr<std::vector<ExpressionCase>> LoadExpressionCases() {
  ASSIGN_OR_RETURN(Json json, ReadCases());
  std::vector<ExpressionCase> cases;
  try {
    for (const Json& item : json["expressions"]) {
      ExpressionCase& c = cases.emplace_back();
      c.expr = item["expr"].get<std::string>();
      for (const auto& [name, value] : item["names"].items()) c.names[name] = Number(value);
      c.value = Number(item["value"]);
    }
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("nearest_fallback.json: ", e.what()));
  }
  return cases;
}

}  // namespace tunefleet::testing
