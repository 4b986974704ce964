#include "client/client_settings.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tunefleet {
namespace {

constexpr char kCurrentContext[] = "current-context";
constexpr char kDefaultServer[] = "localhost:7070";
// A year: longer deadlines are typos (and would overflow milliseconds).
constexpr double kMaxTimeout = 365 * 24 * 3600;

std::string ConfigDir(const Environment& env) {
  if (IsSetting(env, "XDG_CONFIG_HOME")) return absl::StrCat(env("XDG_CONFIG_HOME"), "/tunefleet");
  if (IsSetting(env, "HOME")) return absl::StrCat(env("HOME"), "/.config/tunefleet");
  return "";
}

// One setting: the environment variable, else the context's key, else the
// top level's; nullopt when none has it.
class Settings {
 public:
  Settings(const Environment& env, const ClientConfigFile& file, const std::string& context)
      : env_(env), file_(file), context_(context) {}

  // An empty value counts as unset, as an empty variable does.
  std::optional<std::string> Get(const char* env_name, const std::string& key) const {
    if (env_name != nullptr && IsSetting(env_, env_name)) return std::string(env_(env_name));
    if (!context_.empty()) {
      const auto& section = file_.sections.at(context_);
      if (auto it = section.find(key); it != section.end() && !it->second.empty()) {
        return it->second;
      }
    }
    if (auto it = file_.top.find(key); it != file_.top.end() && !it->second.empty()) {
      return it->second;
    }
    return std::nullopt;
  }

 private:
  const Environment& env_;
  const ClientConfigFile& file_;
  const std::string& context_;
};

}  // namespace

bool IsSetting(const Environment& env, const char* name) {
  const char* value = env(name);
  return value != nullptr && *value != '\0';
}

bool IsTrueSetting(absl::string_view text) {
  return text == "1" || absl::EqualsIgnoreCase(text, "true") ||
         absl::EqualsIgnoreCase(text, "yes");
}

std::string NormalConfigKey(std::string key) {
  for (char& c : key) {
    if (c == '_') c = '-';
  }
  return key;
}

std::optional<std::string> ConfigSectionName(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  if (line.size() < 2 || line.front() != '[' || line.back() != ']') return std::nullopt;
  return std::string(absl::StripAsciiWhitespace(line.substr(1, line.size() - 2)));
}

std::optional<std::pair<std::string, std::string>> ConfigKeyValue(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  const size_t eq = line.find('=');
  if (line.empty() || line[0] == '#' || line[0] == ';' || eq == absl::string_view::npos) {
    return std::nullopt;
  }
  absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
  if (!value.empty() && (value.front() == '"' || value.front() == '\'')) {
    // A quoted value ends at its closing quote; a comment may follow.
    const size_t close = value.find(value.front(), 1);
    if (close != absl::string_view::npos) value = value.substr(1, close - 1);
  } else if (const size_t comment = value.find(" #"); comment != absl::string_view::npos) {
    value = absl::StripTrailingAsciiWhitespace(value.substr(0, comment));
  }
  return std::make_pair(
      NormalConfigKey(std::string(absl::StripAsciiWhitespace(line.substr(0, eq)))),
      std::string(value));
}

ClientConfigFile ParseClientConfig(absl::string_view text) {
  ClientConfigFile file;
  std::map<std::string, std::string>* keys = &file.top;
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    if (std::optional<std::string> section = ConfigSectionName(line); section.has_value()) {
      keys = &file.sections[*section];
    } else if (auto kv = ConfigKeyValue(line); kv.has_value()) {
      keys->emplace(kv->first, kv->second);  // the first of a key wins
    }
  }
  return file;
}

std::string DefaultClientConfigPath(const Environment& env) {
  if (IsSetting(env, "TUNEFLEET_CONFIG")) return env("TUNEFLEET_CONFIG");
  const std::string dir = ConfigDir(env);
  if (dir.empty()) return "";
  const std::string config = dir + "/config";
  const std::string older = dir + "/tunectl.conf";
  std::error_code error;
  return !std::filesystem::exists(config, error) && std::filesystem::exists(older, error)
             ? older
             : config;
}

std::string DefaultTokenFile(const Environment& env) {
  const std::string dir = ConfigDir(env);
  return dir.empty() ? "" : dir + "/token";
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::string message =
        absl::StrCat("cannot read token file ", path, ": ", std::strerror(errno));
    return errno == EACCES ? absl::PermissionDeniedError(message)
                           : absl::NotFoundError(message);
  }
  std::string line;
  std::getline(in, line);
  std::string token(absl::StripAsciiWhitespace(line));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(path, " holds no token"));
  return token;
}

absl::StatusOr<ClientOptions> ResolveClientOptions(const Environment& env) {
  ClientConfigFile file;
  const std::string path = DefaultClientConfigPath(env);
  if (!path.empty()) {
    std::ifstream in(path);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      file = ParseClientConfig(text.str());
    }
  }
  std::string context = IsSetting(env, "TUNEFLEET_CONTEXT") ? env("TUNEFLEET_CONTEXT") : "";
  if (context.empty()) {
    if (auto it = file.top.find(kCurrentContext); it != file.top.end()) context = it->second;
  }
  if (!context.empty() && !file.sections.count(context)) {
    std::vector<std::string> names;
    for (const auto& [name, keys] : file.sections) names.push_back(name);
    return absl::InvalidArgumentError(
        absl::StrCat("no context '", context, "' in ", path, " (it has: ",
                     names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
  }
  const Settings settings(env, file, context);
  ClientOptions options;
  options.target = settings.Get("TUNEFLEET_SERVER", "server").value_or(kDefaultServer);
  options.insecure = IsTrueSetting(settings.Get("TUNEFLEET_INSECURE", "insecure").value_or(""));
  options.ca_file = settings.Get("TUNEFLEET_CA_FILE", "ca-file").value_or("");
  if (std::optional<std::string> timeout = settings.Get(nullptr, "timeout")) {
    double seconds = 0;
    if (!absl::SimpleAtod(*timeout, &seconds) || !(seconds > 0) || !(seconds <= kMaxTimeout)) {
      return absl::InvalidArgumentError(absl::StrCat("timeout = ", *timeout, " in ", path,
                                                     ": not a number of seconds in (0, ",
                                                     kMaxTimeout, "]"));
    }
    options.deadline = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1e3)));
  }
  if (options.insecure) return options;  // never a token in the clear
  if (IsSetting(env, "TUNEFLEET_TOKEN")) {
    options.token = env("TUNEFLEET_TOKEN");
    return options;
  }
  std::string token_file = settings.Get("TUNEFLEET_TOKEN_FILE", "token-file").value_or("");
  if (token_file.empty()) {
    token_file = DefaultTokenFile(env);
    std::error_code error;
    if (token_file.empty() || !std::filesystem::exists(token_file, error)) return options;
  }
  ASSIGN_OR_RETURN(options.token, ReadTokenFile(token_file));
  return options;
}

}  // namespace tunefleet
