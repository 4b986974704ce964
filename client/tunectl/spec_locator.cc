#include "client/tunectl/spec_locator.h"

#include <regex>
#include <string>

#include "absl/strings/match.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"
#include "tunefleet/v1/kernel_spec.pb.h"

namespace tunefleet::tunectl {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::TextFormat;

// The parsed spec with the location of every field.
class Located {
 public:
  bool Parse(absl::string_view text) {
    TextFormat::Parser parser;
    parser.WriteLocationsTo(&tree_);
    return parser.ParseFromString(std::string(text), &spec_);
  }

  // Field `name` (element `index` when repeated, -1 when singular).
  std::optional<int> Line(const std::string& name, int index = -1) const {
    const FieldDescriptor* field = Field(name);
    if (field == nullptr) return std::nullopt;
    if (field->is_repeated() && index < 0) index = 0;
    int line = tree_.GetLocation(field, index).line;
    if (line < 0) return std::nullopt;
    return line + 1;
  }

  // The element of repeated message field `name` whose own `name` is
  // `element`: the last one, which is the culprit for "used twice".
  std::optional<int> Named(const std::string& name,
                           const std::string& element) const {
    const FieldDescriptor* field = Field(name);
    const auto* reflection = spec_.GetReflection();
    for (int i = reflection->FieldSize(spec_, field) - 1; i >= 0; --i) {
      const auto& item = reflection->GetRepeatedMessage(spec_, field, i);
      const FieldDescriptor* item_name =
          item.GetDescriptor()->FindFieldByName("name");
      if (item.GetReflection()->GetString(item, item_name) == element) {
        return Line(name, i);
      }
    }
    return Line(name);
  }

  // The `sources` entry that `message` names, else `reference`.
  std::optional<int> Source(absl::string_view message) const {
    for (int i = 0; i < spec_.sources_size(); ++i) {
      const std::string& path = spec_.sources(i);
      if (absl::EndsWith(message, "/" + path) ||
          absl::StrContains(message, "\"" + path + "\"")) {
        return Line("sources", i);
      }
    }
    return Line("reference");
  }

 private:
  static const FieldDescriptor* Field(const std::string& name) {
    return v1::KernelSpec::descriptor()->FindFieldByName(name);
  }

  v1::KernelSpec spec_;
  TextFormat::ParseInfoTree tree_;
};

// The message prefixes and the spec field each one is about.
struct Rule {
  const char* pattern;  // group 1, when present, picks the element
  const char* field;
  enum Kind { kField, kOrdinal, kNamed } kind;
};

constexpr Rule kRules[] = {
    {R"re(^dim name "(\w*)")re", "problem", Rule::kNamed},
    {R"re(^param name "(\w*)")re", "params", Rule::kNamed},
    {R"re(^derived name "(\w*)")re", "derived", Rule::kNamed},
    {R"re(^argument name "(\w*)")re", "args", Rule::kNamed},
    {R"re(^(?:scalar |tensor map )?argument (\w+))re", "args", Rule::kNamed},
    {R"re(^param (\w+))re", "params", Rule::kNamed},
    {R"re(^derived (\w+))re", "derived", Rule::kNamed},
    {R"re(^metric (\w+))re", "metrics", Rule::kNamed},
    {R"re(^constraint #(\d+))re", "constraints", Rule::kOrdinal},
    {R"re(^config_sets (\w*))re", "config_sets", Rule::kNamed},
    {R"re(^default_config)re", "default_config", Rule::kField},
    {R"re(^launch\.)re", "launch", Rule::kField},
    {R"re(^kernel name)re", "name", Rule::kField},
    {R"re(^backend)re", "backend", Rule::kField},
    {R"re(^entry)re", "entry", Rule::kField},
    {R"re(^problem)re", "problem", Rule::kField},
    {R"re(^no params)re", "params", Rule::kField},
    {R"re(^reference)re", "reference", Rule::kField},
    {R"re(^spec has no output)re", "args", Rule::kField},
};

}  // namespace

std::optional<int> LocateSpecProblem(absl::string_view spec_text,
                                     absl::string_view problem) {
  Located spec;
  if (!spec.Parse(spec_text)) return std::nullopt;
  const std::string message(problem);
  if (absl::StartsWith(message, "cannot read ") ||
      absl::StrContains(message, "source path")) {
    return spec.Source(message);
  }
  for (const Rule& rule : kRules) {
    std::smatch match;
    if (!std::regex_search(message, match, std::regex(rule.pattern))) continue;
    switch (rule.kind) {
      case Rule::kField:
        return spec.Line(rule.field);
      case Rule::kOrdinal:
        return spec.Line(rule.field, std::stoi(match[1]) - 1);
      case Rule::kNamed:
        return spec.Named(rule.field, match[1]);
    }
  }
  return std::nullopt;
}

}  // namespace tunefleet::tunectl
