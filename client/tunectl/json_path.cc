#include "client/tunectl/json_path.h"

#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

using Json = nlohmann::ordered_json;

// One step of a path: a member name, an index, or every element ("*").
struct Step {
  enum Kind { kMember, kIndex, kAll } kind;
  std::string name;
  long index = 0;
  std::string text;  // as written, for messages
};

absl::StatusOr<std::vector<Step>> Parse(std::string path) {
  path = std::string(absl::StripAsciiWhitespace(path));
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}') {
    path = path.substr(1, path.size() - 2);
  }
  const auto bad = [&path](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("jsonpath '", path, "': ", why,
                                                   " (e.g. {.targets[0].best.config})"));
  };
  std::vector<Step> steps;
  size_t i = 0;
  if (i < path.size() && path[i] == '$') ++i;
  while (i < path.size()) {
    if (path[i] == '.') {
      size_t end = i + 1;
      while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
      if (end == i + 1) {
        if (i + 1 == path.size() && steps.empty()) break;  // "." or "{.}": the whole document
        return bad("an empty member name");
      }
      const std::string name = path.substr(i + 1, end - i - 1);
      steps.push_back(name == "*" ? Step{Step::kAll, "", 0, "." + name}
                                  : Step{Step::kMember, name, 0, "." + name});
      i = end;
    } else if (path[i] == '[') {
      const size_t end = path.find(']', i);
      if (end == std::string::npos) return bad("a '[' without its ']'");
      std::string inner = path.substr(i + 1, end - i - 1);
      const std::string text = path.substr(i, end - i + 1);
      if (inner == "*") {
        steps.push_back({Step::kAll, "", 0, text});
      } else if (inner.size() >= 2 && (inner.front() == '\'' || inner.front() == '"') &&
                 inner.back() == inner.front()) {
        steps.push_back({Step::kMember, inner.substr(1, inner.size() - 2), 0, text});
      } else if (long index = 0; absl::SimpleAtoi(inner, &index)) {
        steps.push_back({Step::kIndex, "", index, text});
      } else {
        return bad(absl::StrCat("'", text, "' is no index, '*' or quoted name"));
      }
      i = end + 1;
    } else if (steps.empty() && i == 0) {
      path = "." + path;  // "state" reads as ".state"
    } else {
      return bad(absl::StrCat("unexpected '", std::string(1, path[i]), "'"));
    }
  }
  return steps;
}

std::string Printed(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

absl::StatusOr<std::string> SelectJsonPath(const std::string& json_text, const std::string& path) {
  absl::StatusOr<std::vector<Step>> steps = Parse(path);
  if (!steps.ok()) return steps.status();
  const Json document = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return absl::InvalidArgumentError("the output is not JSON");
  std::vector<const Json*> matches = {&document};
  std::string walked;
  for (const Step& step : *steps) {
    walked += step.text;
    std::vector<const Json*> next;
    for (const Json* value : matches) {
      if (step.kind == Step::kMember && value->is_object() && value->contains(step.name)) {
        next.push_back(&(*value)[step.name]);
      } else if (step.kind == Step::kIndex && value->is_array()) {
        const long size = static_cast<long>(value->size());
        const long index = step.index < 0 ? size + step.index : step.index;
        if (index >= 0 && index < size) next.push_back(&(*value)[static_cast<size_t>(index)]);
      } else if (step.kind == Step::kAll && (value->is_array() || value->is_object())) {
        for (const Json& element : *value) next.push_back(&element);
      }
    }
    if (next.empty()) return absl::NotFoundError(absl::StrCat("jsonpath: nothing at ", walked));
    matches = std::move(next);
  }
  std::string out;
  for (const Json* value : matches) absl::StrAppend(&out, Printed(*value), "\n");
  return out;
}

}  // namespace tunefleet::tunectl
