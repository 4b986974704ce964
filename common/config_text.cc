#include "common/config_text.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"

namespace tunefleet {

absl::StatusOr<NameValues> ParseNameValues(absl::string_view text) {
  NameValues items;
  absl::flat_hash_set<std::string> seen;
  if (absl::StripAsciiWhitespace(text).empty()) return items;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(item, absl::MaxSplits('=', 1));
    std::string name(absl::StripAsciiWhitespace(kv.first));
    absl::string_view value_text = absl::StripAsciiWhitespace(kv.second);
    int64_t value = 0;
    if (item.find('=') == absl::string_view::npos || name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected NAME=VALUE, got \"", item, "\""));
    }
    if (!absl::SimpleAtoi(value_text, &value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "value of ", name, " is not an integer: \"", value_text, "\""));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat(name, " given twice"));
    }
    items.emplace_back(std::move(name), value);
  }
  return items;
}

std::string FormatNameValues(const NameValues& items) {
  return absl::StrJoin(items, ",", [](std::string* out, const auto& item) {
    absl::StrAppend(out, item.first, "=", item.second);
  });
}

absl::StatusOr<v1::Config> ParseConfig(absl::string_view text) {
  absl::StatusOr<NameValues> items = ParseNameValues(text);
  if (!items.ok()) return items.status();
  v1::Config config;
  for (const auto& [name, value] : *items) {
    v1::ParamValue* pv = config.add_values();
    pv->set_name(name);
    pv->set_value(value);
  }
  return config;
}

std::string ConfigToString(const v1::Config& config) {
  NameValues items;
  for (const v1::ParamValue& pv : config.values()) {
    items.emplace_back(pv.name(), pv.value());
  }
  return FormatNameValues(items);
}

absl::StatusOr<v1::Shape> ParseShape(absl::string_view text) {
  absl::StatusOr<NameValues> items = ParseNameValues(text);
  if (!items.ok()) return items.status();
  v1::Shape shape;
  for (const auto& [name, value] : *items) {
    v1::DimValue* dv = shape.add_dims();
    dv->set_name(name);
    dv->set_value(value);
  }
  return shape;
}

std::string ShapeToString(const v1::Shape& shape) {
  NameValues items;
  for (const v1::DimValue& dv : shape.dims()) {
    items.emplace_back(dv.name(), dv.value());
  }
  return FormatNameValues(items);
}

std::optional<int64_t> FindParam(const v1::Config& config, absl::string_view name) {
  for (const v1::ParamValue& pv : config.values()) {
    if (pv.name() == name) return pv.value();
  }
  return std::nullopt;
}

std::optional<int64_t> FindDim(const v1::Shape& shape, absl::string_view name) {
  for (const v1::DimValue& dv : shape.dims()) {
    if (dv.name() == name) return dv.value();
  }
  return std::nullopt;
}

}  // namespace tunefleet
