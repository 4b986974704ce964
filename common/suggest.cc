#include "common/suggest.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace tunefleet {

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

std::vector<std::string> NamesToList(const std::string& word, std::vector<std::string> known,
                                     size_t max_listed) {
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  if (known.size() <= max_listed) return known;
  // (0 when the name contains the word, edit distance, name)
  std::vector<std::tuple<int, int, std::string>> ranked;
  ranked.reserve(known.size());
  const std::string lower_word = absl::AsciiStrToLower(word);
  for (std::string& name : known) {
    const bool contains = absl::StrContains(absl::AsciiStrToLower(name), lower_word);
    const int distance = EditDistance(word, name);
    ranked.emplace_back(contains ? 0 : 1, distance, std::move(name));
  }
  std::partial_sort(ranked.begin(), ranked.begin() + max_listed, ranked.end());
  std::vector<std::string> nearest;
  for (size_t i = 0; i < max_listed; ++i) nearest.push_back(std::move(std::get<2>(ranked[i])));
  return nearest;
}

}  // namespace tunefleet
