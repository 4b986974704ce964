#include "client/tunectl/completion.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tunefleet::tunectl {
namespace {

// The verbs whose first word is a job id, and those whose first word is a
// kernel name: their values are completed from the coordinator.
const std::vector<std::string> kJobVerbs = {"watch",  "status", "cancel", "trials",
                                            "profile", "report", "compare"};
const std::vector<std::string> kKernelVerbs = {"best", "history", "export"};

std::string Words(const CommandWords& command) {
  std::vector<std::string> words;
  for (const CommandWords& verb : command.verbs) words.push_back(verb.name);
  words.insert(words.end(), command.flags.begin(), command.flags.end());
  return absl::StrJoin(words, " ");
}

// One `case` arm per verb path ("admin token"), the path joined by spaces.
void AppendCases(const CommandWords& command, const std::string& path, std::string* out) {
  for (const CommandWords& verb : command.verbs) {
    const std::string verb_path = path.empty() ? verb.name : absl::StrCat(path, " ", verb.name);
    absl::StrAppend(out, "    \"", verb_path, "\") words=\"", Words(verb), "\" ;;\n");
    AppendCases(verb, verb_path, out);
  }
}

}  // namespace

std::string BashCompletion(const CommandWords& root, const std::vector<std::string>& value_flags) {
  std::string script = absl::StrCat(
      "# bash completion for ", root.name, " (", root.name, " completion bash)\n",
      "_", root.name, "() {\n",
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" path=\"\" skip=0 i words\n",
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n",
      "    local w=\"${COMP_WORDS[i]}\"\n",
      "    if ((skip)); then skip=0; continue; fi\n",
      "    case \"$w\" in\n",
      "      ", absl::StrJoin(value_flags, "|"), ") skip=1 ;;\n",
      "      -*) ;;\n",
      "      *) local next=\"${path:+$path }$w\"\n",
      "         case \" $(_", root.name, "_words \"$path\") \" in\n",
      "           *\" $w \"*) path=\"$next\" ;;\n",
      "         esac ;;\n",
      "    esac\n",
      "  done\n",
      "  local prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n",
      "  case \"$prev\" in\n",
      "    -o|--output) COMPREPLY=($(compgen -W \"table wide json yaml csv jsonpath=\" -- \"$cur\"))"
      "; return ;;\n",
      "    --context) COMPREPLY=($(compgen -W \"$(_", root.name, "_ask contexts)\" -- \"$cur\"))"
      "; return ;;\n",
      "  esac\n",
      "  words=\"$(_", root.name, "_words \"$path\")\"\n",
      "  if [[ \"$cur\" != -* ]]; then\n",
      "    case \"$path\" in\n",
      "      ", absl::StrJoin(kJobVerbs, "|"), ") words=\"$words $(_", root.name,
      "_ask jobs)\" ;;\n",
      "      ", absl::StrJoin(kKernelVerbs, "|"), ") words=\"$words $(_", root.name,
      "_ask kernels)\" ;;\n",
      "      \"config use-context\"|\"config set-context\") words=\"$words $(_", root.name,
      "_ask contexts)\" ;;\n",
      "    esac\n",
      "  fi\n",
      "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n",
      "}\n",
      "# Names only the coordinator or the config file knows, asked quietly with\n",
      "# a short deadline (nothing when it cannot answer). compgen -W expands its\n",
      "# words: only plain names pass, so no answer can run a command here.\n",
      "_", root.name, "_ask() {\n",
      "  local self=\"${COMP_WORDS[0]}\" t=\"${TUNEFLEET_COMPLETION_TIMEOUT:-1}\"\n",
      "  case \"$1\" in\n",
      "    jobs) \"$self\" -q --timeout \"$t\" jobs --limit 50 -o 'jsonpath={.jobs[*].id}' ;;\n",
      "    kernels) \"$self\" -q --timeout \"$t\" jobs --limit 200 -o 'jsonpath={.jobs[*].kernel}' "
      "| sort -u ;;\n",
      "    contexts) \"$self\" -q config get-contexts -o 'jsonpath={.contexts[*].name}' ;;\n",
      "  esac 2>/dev/null | grep -E '^[A-Za-z0-9_.:=+-]+$'\n",
      "}\n",
      "_", root.name, "_words() {\n",
      "  case \"$1\" in\n",
      "    \"\") words=\"", Words(root), "\" ;;\n");
  AppendCases(root, "", &script);
  absl::StrAppend(&script, "    *) words=\"\" ;;\n  esac\n  echo \"$words\"\n}\n",
                  "complete -o default -F _", root.name, " ", root.name, "\n");
  return script;
}

std::string ZshCompletion(const CommandWords& root, const std::vector<std::string>& value_flags) {
  return absl::StrCat("# zsh completion for ", root.name, " (", root.name,
                      " completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n",
                      BashCompletion(root, value_flags));
}

}  // namespace tunefleet::tunectl
