// Naming what a mistyped name may have meant: the edit distance between two
// names, the one known name nearest to a word ("did you mean 'status'?"),
// and the known names worth listing after "unknown name" (all of a short
// list, the nearest few of a long one).
#ifndef TUNEFLEET_COMMON_SUGGEST_H_
#define TUNEFLEET_COMMON_SUGGEST_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace tunefleet {

// Optimal string alignment distance (insertions, deletions, substitutions,
// transpositions of neighbours), e.g. "stauts" to "status" is 1.
int EditDistance(const std::string& a, const std::string& b);

// The name of `names` nearest to `word`, when at most 2 edits (and fewer
// than the word's length) away; ties to the first in order.
std::optional<std::string> NearestName(const std::string& word,
                                       const std::vector<std::string>& names);

// Lists longer than this are cut to their nearest names (NamesToList).
inline constexpr size_t kMaxListedNames = 8;

// The names of `known` to show after "unknown `word`": every one of them,
// sorted, when there are at most `max_listed`; else the `max_listed` nearest
// to `word`, nearest first: names that contain the word (ignoring case: "H100"
// in "NVIDIA H100 sm_90"), then by EditDistance, ties by name. Duplicates
// are listed once.
std::vector<std::string> NamesToList(const std::string& word, std::vector<std::string> known,
                                     size_t max_listed = kMaxListedNames);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_SUGGEST_H_
