// tunectl's config file: every global flag may be set there, and named
// contexts (one section each) hold the settings of one coordinator:
//
//   current-context = "prod"
//   timeout = 30
//
//   [prod]
//   server = "tunefleet.example.com:7070"
//   ca_file = "/etc/tunefleet/ca.pem"
//   token_file = "/home/me/.config/tunefleet/prod.token"
//
//   [dev]
//   server = "localhost:7070"
//   insecure = true
//
// Keys are flag names without their dashes ("ca-file" and "ca_file" alike);
// `verb.key` sets a verb's flag (`submit.strategy = "random"`). The context
// used is --context, else `current-context`, else none (top-level keys
// only). Precedence: a flag on the command line, else the variable of the
// environment (TUNEFLEET_SERVER, TUNEFLEET_CA_FILE, TUNEFLEET_TOKEN or
// TUNEFLEET_TOKEN_FILE, TUNEFLEET_INSECURE), else the context, else the top
// level. An unknown key, or an unknown context, is an error naming it.
#ifndef TUNEFLEET_CLIENT_TUNECTL_CONTEXTS_H_
#define TUNEFLEET_CLIENT_TUNECTL_CONTEXTS_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/tunectl/commands.h"
#include "client/tunectl/connection.h"

namespace tunefleet::tunectl {

// $TUNEFLEET_CONFIG, else $XDG_CONFIG_HOME/tunefleet/config, else
// $HOME/.config/tunefleet/config; where that file is absent but the older
// tunectl.conf beside it exists, that one. Empty when nothing is set.
std::string DefaultContextConfigPath(const Environment& env);

// Reads a config file for CLI::App::config_formatter: the top-level items,
// then the chosen context's items as if they were top-level. Throws
// CLI::ConfigError for a context the file lacks.
// Thread-safety: used by one App on one thread.
class ContextConfig : public CLI::ConfigBase {
 public:
  // `verbs`: the names of the app's verbs (a section of that name is the
  // verb's, not a context). `chosen`: the --context value, or "".
  ContextConfig(std::set<std::string> verbs, std::function<std::string()> chosen,
                Environment env);

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;

 private:
  std::set<std::string> verbs_;
  std::function<std::string()> chosen_;
  Environment env_;
};

// One context as `config get-contexts` lists it.
struct ContextInfo {
  std::string name;
  std::string server;  // empty when the context does not set one
  bool current = false;
};

// The settings `config set-context` writes; empty ones are left as they are.
struct ContextSettings {
  std::string server;
  std::string ca_file;
  std::string token_file;
  bool insecure = false;  // written as `insecure = true` when set
};

// `verbs` below: the names of the app's verbs, as for ContextConfig; a
// section of such a name holds the verb's flags and is no context.

// The contexts of the file at `path` (none when it is absent), in file order.
absl::StatusOr<std::vector<ContextInfo>> ListContexts(const std::string& path,
                                                      const std::set<std::string>& verbs);
// The file's `current-context`; NotFound when it has none.
absl::StatusOr<std::string> CurrentContext(const std::string& path);
// Makes `name` current. NotFound when the file has no such context.
absl::Status UseContext(const std::string& path, const std::string& name,
                        const std::set<std::string>& verbs);
// Creates context `name` or updates its keys; the file (and its directory)
// is created when absent, readable by its owner only. InvalidArgument for a
// name that is empty, holds anything but letters, digits, '-', '_', or is
// one of `verbs`.
absl::Status SetContext(const std::string& path, const std::string& name,
                        const ContextSettings& settings, const std::set<std::string>& verbs);

// The `config` verbs, offline: they print (or change) the file at `path`.
int RunGetContexts(const std::string& path, const std::set<std::string>& verbs,
                   const Console& console);
int RunCurrentContext(const std::string& path, const Console& console);
int RunUseContext(const std::string& path, const std::string& name,
                  const std::set<std::string>& verbs, const Console& console);
int RunSetContext(const std::string& path, const std::string& name,
                  const ContextSettings& settings, const std::set<std::string>& verbs,
                  const Console& console);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_CONTEXTS_H_
