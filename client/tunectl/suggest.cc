#include "client/tunectl/suggest.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tunefleet::tunectl {

int EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<int>> d(a.size() + 1, std::vector<int>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> NearestName(const std::string& word,
                                       const std::vector<std::string>& names) {
  std::optional<std::string> nearest;
  int best = std::min(3, static_cast<int>(word.size()));
  for (const std::string& name : names) {
    const int distance = EditDistance(word, name);
    if (distance < best) {
      best = distance;
      nearest = name;
    }
  }
  return nearest;
}

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

}  // namespace tunefleet::tunectl
