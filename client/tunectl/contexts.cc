#include "client/tunectl/contexts.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "client/tunectl/exit_codes.h"
#include "common/file_util.h"
#include "nlohmann/json.hpp"

namespace tunefleet::tunectl {
namespace {

constexpr char kCurrentKey[] = "current-context";

// The environment variables that override a key of the file.
const std::vector<std::pair<std::string, std::vector<const char*>>>& EnvironmentOverrides() {
  static const auto* overrides = new std::vector<std::pair<std::string, std::vector<const char*>>>{
      {"server", {"TUNEFLEET_SERVER"}},
      {"ca-file", {"TUNEFLEET_CA_FILE"}},
      {"token-file", {"TUNEFLEET_TOKEN", "TUNEFLEET_TOKEN_FILE"}},
      {"insecure", {"TUNEFLEET_INSECURE"}}};
  return *overrides;
}

// Whether section `section` (or its dotted parent) is a context: any section
// but a verb's, which holds that verb's flags. The file's reader
// (ContextConfig) and its editors share this rule.
bool IsContext(absl::string_view section, const std::set<std::string>& verbs) {
  const std::string first(*absl::StrSplit(section, '.').begin());
  return !verbs.count(first);
}

// The lines of the file; none when it is absent.
absl::StatusOr<std::vector<std::string>> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  if (!std::filesystem::exists(path)) return lines;
  std::ifstream in(path);
  if (!in) return absl::PermissionDeniedError(absl::StrCat("cannot read ", path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Replaces the file at once (a new file renamed over it), owner-only: it
// names token files.
absl::Status WriteLines(const std::string& path, const std::vector<std::string>& lines) {
  std::error_code error;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  std::string text;
  for (const std::string& line : lines) absl::StrAppend(&text, line, "\n");
  return WriteFileAtomic(path, text, /*mode=*/0600);
}

// [begin, end) of section `name`'s lines after its header; nullopt if absent.
std::optional<std::pair<size_t, size_t>> SectionRange(const std::vector<std::string>& lines,
                                                      const std::string& name) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (ConfigSectionName(lines[i]) != name) continue;
    size_t end = i + 1;
    while (end < lines.size() && !ConfigSectionName(lines[end]).has_value()) ++end;
    return std::make_pair(i + 1, end);
  }
  return std::nullopt;
}

size_t FirstSection(const std::vector<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (ConfigSectionName(lines[i]).has_value()) return i;
  }
  return lines.size();
}

// Sets `key` in [begin, end) or inserts it after the range's last non-blank
// line; returns how many lines were inserted.
size_t SetKey(std::vector<std::string>* lines, size_t begin, size_t end, const std::string& key,
              const std::string& value) {
  const std::string line = absl::StrCat(key, " = \"", value, "\"");
  for (size_t i = begin; i < end; ++i) {
    std::optional<std::pair<std::string, std::string>> kv = ConfigKeyValue((*lines)[i]);
    if (kv.has_value() && kv->first == NormalConfigKey(key)) {
      (*lines)[i] = line;
      return 0;
    }
  }
  size_t at = end;
  while (at > begin && absl::StripAsciiWhitespace((*lines)[at - 1]).empty()) --at;
  lines->insert(lines->begin() + at, line);
  return 1;
}

bool ValidName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '-' || c == '_';
  });
}

}  // namespace

std::string DefaultContextConfigPath(const Environment& env) {
  return DefaultClientConfigPath(env);
}

ContextConfig::ContextConfig(std::set<std::string> verbs, std::function<std::string()> chosen,
                             Environment env)
    : verbs_(std::move(verbs)), chosen_(std::move(chosen)), env_(std::move(env)) {}

std::vector<CLI::ConfigItem> ContextConfig::from_config(std::istream& input) const {
  std::vector<CLI::ConfigItem> items = CLI::ConfigBase::from_config(input);
  std::string context = chosen_();
  std::set<std::string> contexts;
  for (const CLI::ConfigItem& item : items) {
    if (!item.parents.empty() && IsContext(item.parents[0], verbs_)) {
      contexts.insert(item.parents[0]);
    }
    if (item.parents.empty() && item.name == kCurrentKey && context.empty() &&
        !item.inputs.empty()) {
      context = item.inputs[0];
    }
  }
  if (!context.empty() && !contexts.count(context)) {
    throw CLI::ConfigError(absl::StrCat("no context '", context, "' in the config file (it has: ",
                                        contexts.empty() ? "none" : absl::StrJoin(contexts, ", "),
                                        ")"));
  }
  // CLI11 keeps the first value it reads for a flag: the context's items go
  // first, so that they win over the top level's (client/client_settings.h).
  std::stable_partition(items.begin(), items.end(), [this, &context](const CLI::ConfigItem& item) {
    return !item.parents.empty() && item.parents[0] == context && IsContext(item.parents[0], verbs_);
  });
  std::vector<CLI::ConfigItem> chosen_items;
  for (CLI::ConfigItem item : items) {
    item.name = NormalConfigKey(item.name);
    if (item.parents.empty() && item.name == kCurrentKey) continue;
    const bool in_context = !item.parents.empty() && IsContext(item.parents[0], verbs_);
    if (in_context) {
      if (item.parents[0] != context || item.name == "++" || item.name == "--") continue;
      item.parents.erase(item.parents.begin());
    }
    bool overridden = false;
    for (const auto& [key, names] : EnvironmentOverrides()) {
      if (item.parents.empty() && item.name == key) {
        for (const char* name : names) overridden = overridden || IsSetting(env_, name);
      }
    }
    if (!overridden) chosen_items.push_back(std::move(item));
  }
  return chosen_items;
}

absl::StatusOr<std::vector<ContextInfo>> ListContexts(const std::string& path,
                                                      const std::set<std::string>& verbs) {
  absl::StatusOr<std::vector<std::string>> lines = ReadLines(path);
  if (!lines.ok()) return lines.status();
  std::string current;
  if (absl::StatusOr<std::string> name = CurrentContext(path); name.ok()) current = *name;
  std::vector<ContextInfo> contexts;
  bool in_context = false;  // the lines read are a listed context's
  for (const std::string& line : *lines) {
    if (std::optional<std::string> name = ConfigSectionName(line); name.has_value()) {
      in_context = IsContext(*name, verbs);
      if (in_context) contexts.push_back({*name, "", *name == current});
    } else if (std::optional<std::pair<std::string, std::string>> kv = ConfigKeyValue(line);
               kv.has_value() && kv->first == "server" && in_context) {
      contexts.back().server = kv->second;
    }
  }
  return contexts;
}

absl::StatusOr<std::string> CurrentContext(const std::string& path) {
  absl::StatusOr<std::vector<std::string>> lines = ReadLines(path);
  if (!lines.ok()) return lines.status();
  for (size_t i = 0; i < FirstSection(*lines); ++i) {
    std::optional<std::pair<std::string, std::string>> kv = ConfigKeyValue((*lines)[i]);
    if (kv.has_value() && kv->first == kCurrentKey && !kv->second.empty()) return kv->second;
  }
  return absl::NotFoundError(absl::StrCat("no current context in ", path));
}

absl::Status UseContext(const std::string& path, const std::string& name,
                        const std::set<std::string>& verbs) {
  absl::StatusOr<std::vector<std::string>> lines = ReadLines(path);
  if (!lines.ok()) return lines.status();
  if (!IsContext(name, verbs) || !SectionRange(*lines, name).has_value()) {
    return absl::NotFoundError(absl::StrCat("no context '", name, "' in ", path,
                                            " (add it with tunectl config set-context)"));
  }
  SetKey(&*lines, 0, FirstSection(*lines), kCurrentKey, name);
  return WriteLines(path, *lines);
}

absl::Status SetContext(const std::string& path, const std::string& name,
                        const ContextSettings& settings, const std::set<std::string>& verbs) {
  if (!ValidName(name) || verbs.count(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid context name '", name,
        "': use letters, digits, '-' and '_', and not the name of a tunectl verb"));
  }
  absl::StatusOr<std::vector<std::string>> lines = ReadLines(path);
  if (!lines.ok()) return lines.status();
  if (!SectionRange(*lines, name).has_value()) {
    if (!lines->empty() && !absl::StripAsciiWhitespace(lines->back()).empty()) {
      lines->push_back("");
    }
    lines->push_back(absl::StrCat("[", name, "]"));
  }
  auto [begin, end] = *SectionRange(*lines, name);
  for (const auto& [key, value] :
       {std::pair<std::string, std::string>{"server", settings.server},
        {"ca_file", settings.ca_file},
        {"token_file", settings.token_file},
        {"insecure", settings.insecure ? "true" : ""}}) {
    if (!value.empty()) end += SetKey(&*lines, begin, end, key, value);
  }
  return WriteLines(path, *lines);
}

int RunGetContexts(const std::string& path, const std::set<std::string>& verbs,
                   const Console& console) {
  absl::StatusOr<std::vector<ContextInfo>> contexts = ListContexts(path, verbs);
  if (!contexts.ok()) return ReportError(console, contexts.status());
  if (console.format == OutputFormat::kJson) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const ContextInfo& c : *contexts) {
      list.push_back({{"name", c.name}, {"server", c.server}, {"current", c.current}});
    }
    *console.out << JsonDocument({{"config_file", path}, {"contexts", list}});
    return kExitOk;
  }
  std::vector<Row> rows;
  for (const ContextInfo& c : *contexts) {
    rows.push_back({c.current ? "*" : "", c.name, c.server.empty() ? "-" : c.server});
  }
  *console.out << RenderTable({"CURRENT", "NAME", "SERVER"}, rows);
  return kExitOk;
}

int RunCurrentContext(const std::string& path, const Console& console) {
  absl::StatusOr<std::string> name = CurrentContext(path);
  if (!name.ok()) return ReportError(console, name.status());
  *console.out << *name << "\n";
  return kExitOk;
}

int RunUseContext(const std::string& path, const std::string& name,
                  const std::set<std::string>& verbs, const Console& console) {
  if (absl::Status used = UseContext(path, name, verbs); !used.ok()) {
    return ReportError(console, used);
  }
  Notes(console) << "switched to context " << name << "\n";
  return kExitOk;
}

int RunSetContext(const std::string& path, const std::string& name,
                  const ContextSettings& settings, const std::set<std::string>& verbs,
                  const Console& console) {
  absl::Status set = SetContext(path, name, settings, verbs);
  if (!set.ok()) return ReportError(console, set);
  Notes(console) << "context " << name << " written to " << path << "\n";
  return kExitOk;
}

}  // namespace tunefleet::tunectl
