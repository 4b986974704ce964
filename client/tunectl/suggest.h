// Naming a mistyped tunectl verb: "unknown command 'stauts'; did you mean
// 'status'?" instead of CLI11's "A subcommand is required".
#ifndef TUNEFLEET_CLIENT_TUNECTL_SUGGEST_H_
#define TUNEFLEET_CLIENT_TUNECTL_SUGGEST_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tunefleet::tunectl {

// The first word of `args` (argv without the program) that is not an
// option nor the value of one of `value_options`, when it is not in
// `verbs`; nullopt when there is none or it is known.
std::optional<std::string> UnknownVerb(const std::vector<std::string>& args,
                                       const std::vector<std::string>& verbs,
                                       const std::set<std::string>& value_options);

// "unknown command 'X'" with "; did you mean 'Y'?" when one is near
// (NearestName, common/suggest.h), and the hint to run --help.
std::string UnknownVerbMessage(const std::string& word, const std::vector<std::string>& verbs);

// The first option of `args` before the first word that is not an option
// or the value of one of `value_options`, when it is not in `flags`
// (written `--name`, `--name=value`, `-n` or `-nVALUE`); nullopt when there
// is none. Its value, given as the next word, would read as the verb:
// `tunectl --sever h:1 jobs` names the option, not "unknown command 'h:1'".
std::optional<std::string> UnknownOption(const std::vector<std::string>& args,
                                         const std::set<std::string>& flags,
                                         const std::set<std::string>& value_options);

// "unknown option '--sever'; did you mean '--server'?" and the hint.
std::string UnknownOptionMessage(const std::string& option, const std::set<std::string>& flags);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_SUGGEST_H_
