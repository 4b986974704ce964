// Where a client finds its coordinator and credentials when the application
// does not say: the one resolution the C++ library
// (ClientOptions::FromEnvironment), tunectl (client/tunectl/connection.h,
// contexts.h) and the Python package (python/tunefleet/settings.py) share,
// checked against the same cases (tests/data/client_settings_cases.json).
//
// Each setting comes from the environment, else the chosen context of the
// config file, else the file's top level, else its default:
//
//   setting    environment                       config key   default
//   server     TUNEFLEET_SERVER                  server       localhost:7070
//   plaintext  TUNEFLEET_INSECURE=1|true|yes     insecure     false (TLS)
//   CA bundle  TUNEFLEET_CA_FILE                 ca_file      the system's roots
//   token      TUNEFLEET_TOKEN (the token),      token_file   <config dir>/token
//              TUNEFLEET_TOKEN_FILE                           when it exists
//   deadline   -                                 timeout      10 s
//
// The config file is $TUNEFLEET_CONFIG, else <config dir>/config (or the
// older <config dir>/tunectl.conf where only it exists); <config dir> is
// $XDG_CONFIG_HOME/tunefleet, else $HOME/.config/tunefleet. Its context is
// $TUNEFLEET_CONTEXT, else its `current-context`, else none. The format is
// tunectl's (contexts.h): `key = value` lines (values optionally quoted;
// `#` and `;` comment lines, and ` # ...` after a value; `ca-file` and
// `ca_file` alike) and one `[NAME]`
// section per context; other sections (tunectl's verbs) are ignored here.
// A token is never sent over plaintext: with plaintext, none is read.
#ifndef TUNEFLEET_CLIENT_CLIENT_SETTINGS_H_
#define TUNEFLEET_CLIENT_CLIENT_SETTINGS_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tunefleet/client.h"

namespace tunefleet {

// Returns the environment variable's value, or null (std::getenv).
using Environment = std::function<const char*(const char*)>;

// A config file's keys (normalized: '_' as '-'): the top level, and each
// section's.
struct ClientConfigFile {
  std::map<std::string, std::string> top;
  std::map<std::string, std::map<std::string, std::string>> sections;
};

// The name of a `[NAME]` line; nullopt for any other line.
std::optional<std::string> ConfigSectionName(absl::string_view line);
// The normalized key and unquoted value of a `key = value` line; nullopt
// for blanks, comments and other lines.
std::optional<std::pair<std::string, std::string>> ConfigKeyValue(absl::string_view line);
// `key` with '_' as '-' ("ca_file" and "ca-file" are one key).
std::string NormalConfigKey(std::string key);

// Whether the variable `name` is set and not empty.
bool IsSetting(const Environment& env, const char* name);
// "1", "true" or "yes" (any case): how TUNEFLEET_INSECURE and `insecure`
// say yes.
bool IsTrueSetting(absl::string_view text);

ClientConfigFile ParseClientConfig(absl::string_view text);

// The config file's path (see the file comment); "" when neither
// TUNEFLEET_CONFIG, XDG_CONFIG_HOME nor HOME is set.
std::string DefaultClientConfigPath(const Environment& env);
// <config dir>/token; "" when no config dir can be named.
std::string DefaultTokenFile(const Environment& env);

// The first line of a token file, without surrounding blanks. NotFound or
// PermissionDenied naming the file, InvalidArgument for an empty one.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// The options the file comment's rules give. InvalidArgument for a context
// the file lacks or a timeout that is not a positive number of seconds;
// NotFound/PermissionDenied for a token file that cannot be read.
absl::StatusOr<ClientOptions> ResolveClientOptions(const Environment& env);

}  // namespace tunefleet

#endif  // TUNEFLEET_CLIENT_CLIENT_SETTINGS_H_
