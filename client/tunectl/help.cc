#include "client/tunectl/help.h"

#include <algorithm>
#include <iostream>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/tunectl/exit_codes.h"
#include "client/tunectl/suggest.h"
#include "common/suggest.h"

namespace tunefleet::tunectl {

void AddExamples(CLI::App& app) {
  static const auto* examples = new std::vector<std::pair<std::vector<std::string>, const char*>>{
      {{"submit"},
       "  tunectl submit kernels/cpu/matmul --shape M=512,N=512,K=512 --wait\n"
       "  tunectl submit kernels/cuda/gemm_f16 --shape M=4096,N=4096,K=4096 \\\n"
       "      --strategy model --budget 64 --time-budget 600 --wait\n"
       "  tunectl submit kernels/cpu/matmul --shape M=64,N=512,K=512 --shape M=128,N=512,K=512\n"
       "  tunectl submit kernels/cpu/matmul --shape M=512,N=512,K=512 --force --wait   # a retune"},
      {{"watch"}, "  tunectl watch j1a2b3c4d5e6f7a8b9c0"},
      {{"status"},
       "  tunectl status j1a2b3c4d5e6f7a8b9c0\n"
       "  tunectl status j1a2b3c4d5e6f7a8b9c0 -o 'jsonpath={.state}'"},
      {{"jobs"}, "  tunectl jobs --state running -o wide\n  tunectl jobs -o 'jsonpath={.jobs[*].id}'"},
      {{"trials"},
       "  tunectl trials j1a2b3c4d5e6f7a8b9c0 --status compile_error\n"
       "  tunectl -o csv trials j1a2b3c4d5e6f7a8b9c0 > trials.csv"},
      {{"best"},
       "  tunectl best matmul --shape M=512,N=512,K=512\n"
       "  tunectl best gemm_f16 --shape M=4096,N=4096,K=4096 --device 'NVIDIA H100 80GB HBM3 sm_90'"},
      {{"export"},
       "  tunectl export matmul > matmul-best.json\n"
       "  tunectl export fused_moe --format vllm --device 'NVIDIA H100 80GB HBM3 sm_90' --out configs/\n"
       "  tunectl export matmul --format t4 > matmul.t4.json"},
      {{"import"}, "  tunectl import matmul-best.json --origin staging"},
      {{"report"}, "  tunectl report j1a2b3c4d5e6f7a8b9c0 --out report.html\n  tunectl report matmul --out -"},
      {{"sweep"}, "  tunectl sweep s1a2b3c4d5e6f7a8b9c0 --wait"},
      {{"health"},
       "  tunectl --server tuner.example.org:7070 --ca-file ca.crt health\n"
       "  tunectl --server 10.0.0.1:7070,10.0.0.2:7070 --ca-file ca.crt health   # leader, standby"},
      {{"validate"}, "  tunectl validate kernels/cpu/matmul --shape M=512,N=512,K=512"},
      {{"config", "set-context"},
       "  tunectl config set-context prod --server tuner.example.org:7070 --ca-file ca.crt \\\n"
       "      --token-file ~/.config/tunefleet/prod.token\n"
       "  tunectl config use-context prod"},
      {{"admin", "token", "create"}, "  tunectl admin token create --role submit --name alice"},
      {{"admin", "token", "list"}, "  tunectl admin token list"},
      {{"admin", "token", "revoke"}, "  tunectl admin token revoke t1a2b3c4d5e6f7a8b   # an id from list"},
      {{"admin", "invalidate"},
       "  tunectl admin invalidate --worker host:gpu-node-17   # every trial it measured\n"
       "  tunectl admin invalidate --job j1a2b3c4d5e6f7a8b9c0"},
      {{"admin", "release"}, "  tunectl admin release --worker host:gpu-node-17"},
      {{"cancel"}, "  tunectl cancel j1a2b3c4d5e6f7a8b9c0"},
      {{"profile"},
       "  tunectl profile j1a2b3c4d5e6f7a8b9c0 --top 3\n"
       "  tunectl profile j1a2b3c4d5e6f7a8b9c0 --show   # what is stored"},
      {{"version"}, "  tunectl version"},
      {{"history"},
       "  tunectl history matmul\n"
       "  tunectl history gemm_f16 --device 'NVIDIA H100 80GB HBM3 sm_90'"},
      {{"compare"}, "  tunectl compare j1a2b3c4d5e6f7a8b9c0 j1a2b3c4d5e6f7a8b9c1   # a retune and its first"},
      {{"help"}, "  tunectl help submit\n  tunectl help admin token create"},
      {{"completion"},
       "  source <(tunectl completion bash)\n"
       "  tunectl completion zsh > ~/.zsh/functions/_tunectl"},
      {{"workers"}, "  tunectl workers\n  tunectl -o json workers"},
      {{"config", "get-contexts"}, "  tunectl config get-contexts"},
      {{"config", "current-context"}, "  tunectl config current-context"},
      {{"config", "use-context"}, "  tunectl config use-context prod"},
  };
  for (const auto& [path, text] : *examples) {
    CLI::App* command = &app;
    for (const std::string& name : path) command = command->get_subcommand(name);
    command->footer(std::string("Examples:\n") + text);
  }
}

const CLI::App* DeepestParsed(const CLI::App& app) {
  const CLI::App* command = &app;
  while (true) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : command->get_subcommands({})) {
      if (sub->parsed()) next = sub;
    }
    if (next == nullptr) return command;
    command = next;
  }
}

std::string CommandPath(const CLI::App* command) {
  std::vector<std::string> names;
  for (; command != nullptr; command = command->get_parent()) names.push_back(command->get_name());
  std::reverse(names.begin(), names.end());
  return absl::StrJoin(names, " ");
}

std::string ExtrasMessage(const CLI::App& app, const std::string& what) {
  const CLI::App* command = DeepestParsed(app);
  std::vector<std::string> flags, verbs;
  for (const CLI::App* at = command; at != nullptr; at = at->get_parent()) {
    for (const CLI::Option* option : at->get_options()) {
      for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
      for (const std::string& name : option->get_snames()) flags.push_back("-" + name);
    }
  }
  for (const CLI::App* verb : command->get_subcommands({})) verbs.push_back(verb->get_name());
  const size_t colon = what.find(": ");
  std::vector<std::string> words =
      absl::StrSplit(colon == std::string::npos ? what : what.substr(colon + 2), ' ',
                     absl::SkipEmpty());
  std::string message;
  for (const std::string& word : words) {
    const bool flag = absl::StartsWith(word, "-");
    const std::string name = flag ? word.substr(0, word.find('=')) : word;
    absl::StrAppend(&message, message.empty() ? "" : "\ntunectl: ", "unknown ",
                    flag ? "option" : "argument", " '", name, "' for '", CommandPath(command),
                    "'");
    if (std::optional<std::string> near = NearestName(name, flag ? flags : verbs)) {
      absl::StrAppend(&message, "; did you mean '", *near, "'?");
    }
  }
  return absl::StrCat(message, "\nRun '", CommandPath(command), " --help' for its options.");
}

int RunHelp(const CLI::App& app, const std::vector<std::string>& words) {
  const CLI::App* command = &app;
  for (const std::string& word : words) {
    const CLI::App* next = nullptr;
    std::vector<std::string> names;
    for (const CLI::App* sub : command->get_subcommands({})) {
      if (sub->get_name() == word) next = sub;
      if (sub->get_name() != "help") names.push_back(sub->get_name());
    }
    if (next == nullptr) {
      std::cerr << "tunectl: " << UnknownVerbMessage(word, names) << std::endl;
      return kExitUsage;
    }
    command = next;
  }
  std::string help = command->help();
  const std::string usage = "Usage: " + command->get_name() + " ";
  if (const size_t at = help.find(usage); at != std::string::npos && command != &app) {
    help.replace(at, usage.size(), "Usage: " + CommandPath(command) + " ");
  }
  std::cout << help;
  return kExitOk;
}

std::string MissingSubVerbMessage(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = DeepestParsed(app);
  std::vector<std::string> names;
  for (const CLI::App* sub : command->get_subcommands({})) names.push_back(sub->get_name());
  const std::string path = CommandPath(command);
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] != command->get_name()) continue;
    const std::string word = argv[i + 1];
    if (absl::StartsWith(word, "-")) break;
    std::string message = absl::StrCat("unknown command '", word, "' for '", path, "'");
    if (std::optional<std::string> near = NearestName(word, names)) {
      absl::StrAppend(&message, "; did you mean '", *near, "'?");
    }
    return absl::StrCat(message, "\nRun '", path, " --help' for its commands.");
  }
  return absl::StrCat("'", path, "' needs one of: ", absl::StrJoin(names, ", "));
}

}  // namespace tunefleet::tunectl
