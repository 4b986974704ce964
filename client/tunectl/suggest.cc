#include "client/tunectl/suggest.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/suggest.h"

namespace tunefleet::tunectl {

std::optional<std::string> UnknownVerb(const std::vector<std::string>& args,
                                       const std::vector<std::string>& verbs,
                                       const std::set<std::string>& value_options) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") return std::nullopt;
    if (absl::StartsWith(arg, "-")) {
      if (value_options.contains(arg)) ++i;  // its value follows
      continue;
    }
    if (std::find(verbs.begin(), verbs.end(), arg) != verbs.end()) return std::nullopt;
    return arg;
  }
  return std::nullopt;
}

std::string UnknownVerbMessage(const std::string& word, const std::vector<std::string>& verbs) {
  std::string message = absl::StrCat("unknown command '", word, "'");
  if (std::optional<std::string> near = NearestName(word, verbs); near.has_value()) {
    absl::StrAppend(&message, "; did you mean '", *near, "'?");
  }
  return absl::StrCat(message, "\nRun 'tunectl --help' for the commands.");
}

std::optional<std::string> UnknownOption(const std::vector<std::string>& args,
                                         const std::set<std::string>& flags,
                                         const std::set<std::string>& value_options) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--" || !absl::StartsWith(arg, "-") || arg == "-") return std::nullopt;
    // `--name=value`, or a short option with its value attached (`-ojson`).
    const std::string name = absl::StartsWith(arg, "--") ? arg.substr(0, arg.find('='))
                                                         : arg.substr(0, 2);
    if (!flags.contains(name)) return name;
    if (value_options.contains(arg)) ++i;  // its value follows
  }
  return std::nullopt;
}

std::string UnknownOptionMessage(const std::string& option, const std::set<std::string>& flags) {
  std::string message = absl::StrCat("unknown option '", option, "'");
  if (std::optional<std::string> near =
          NearestName(option, std::vector<std::string>(flags.begin(), flags.end()));
      near.has_value()) {
    absl::StrAppend(&message, "; did you mean '", *near, "'?");
  }
  return absl::StrCat(message, "\nRun 'tunectl --help' for the global options.");
}

}  // namespace tunefleet::tunectl
