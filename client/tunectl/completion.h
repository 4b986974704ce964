// `tunectl completion bash|zsh`: a shell completion script for tunectl's
// verbs and flags, generated from the same definitions the parser uses.
#ifndef TUNEFLEET_CLIENT_TUNECTL_COMPLETION_H_
#define TUNEFLEET_CLIENT_TUNECTL_COMPLETION_H_

#include <string>
#include <vector>

namespace tunefleet::tunectl {

// A verb, the flags it takes and its own verbs (`admin token create`).
struct CommandWords {
  std::string name;
  std::vector<std::string> flags;
  std::vector<CommandWords> verbs;
};

// A bash script defining the completion of `root`: the verbs and global
// flags first, then the flags (and sub-verbs) of the verb typed. The words
// after a global flag in `value_flags` are its values, not verbs. Values
// come from where they live: job ids (watch, status, ...) and kernel names
// (best, history, export) from the coordinator's job list, contexts from
// the config file, -o's formats from the list of them; asked with a
// 1-second deadline ($TUNEFLEET_COMPLETION_TIMEOUT), nothing when there is
// no answer.
std::string BashCompletion(const CommandWords& root, const std::vector<std::string>& value_flags);
// The same for zsh, through its bash-completion emulation.
std::string ZshCompletion(const CommandWords& root, const std::vector<std::string>& value_flags);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_COMPLETION_H_
