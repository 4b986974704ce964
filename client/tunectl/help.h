// tunectl's help beyond CLI11's own: `help VERB`, the examples each verb's
// help ends with, and naming what a mistyped flag or sub-verb meant.
#ifndef TUNEFLEET_CLIENT_TUNECTL_HELP_H_
#define TUNEFLEET_CLIENT_TUNECTL_HELP_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tunefleet::tunectl {

// Sets the "Examples:" footer of the verbs that have examples.
void AddExamples(CLI::App& app);

// The verb CLI11 parsed last (`tunectl admin token create`: create), or the
// app itself.
const CLI::App* DeepestParsed(const CLI::App& app);

// "tunectl admin token" for the verb path of `command`.
std::string CommandPath(const CLI::App* command);

// CLI11's "The following arguments were not expected: --strateg x" as
// "unknown option '--strateg' for 'tunectl submit'; did you mean
// '--strategy'?", one line per word: flags against the flags of the verb
// and those above it, other words against the verb's sub-verbs.
std::string ExtrasMessage(const CLI::App& app, const std::string& what);

// A verb whose sub-verb is missing or mistyped (`tunectl admin tokn`):
// which word was not one of them, and the nearest that is.
std::string MissingSubVerbMessage(const CLI::App& app, int argc, char** argv);

// `tunectl help VERB [SUB-VERB]`: that verb's help on stdout, as VERB --help
// prints it but with the full usage path; exit 0, or 2 (with a suggestion
// on stderr) for a verb that does not exist.
int RunHelp(const CLI::App& app, const std::vector<std::string>& words);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_HELP_H_
