// How tunectl reaches and authenticates to the coordinator. Each setting is
// taken from its flag, else the environment, else the config file (lines
// of `key = value`):
//
//   setting     flag           environment                   config key
//   plaintext   --insecure     TUNEFLEET_INSECURE=1          insecure = true
//   CA bundle   --ca-file      TUNEFLEET_CA_FILE             ca_file
//   token       --token-file   TUNEFLEET_TOKEN (the token    token_file
//                              itself), TUNEFLEET_TOKEN_FILE
//
// With no token given, ~/.config/tunefleet/token is read when it exists.
// A token is never sent over plaintext.
#ifndef TUNEFLEET_CLIENT_TUNECTL_CONNECTION_H_
#define TUNEFLEET_CLIENT_TUNECTL_CONNECTION_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

struct ConnectionFlags {
  bool insecure = false;
  std::string ca_file;
  std::string token_file;
  std::string config_file;  // the resolved config file path; may be empty
};

// Returns the environment variable's value, or null (std::getenv in main).
using Environment = std::function<const char*(const char*)>;

// The value of `key` in a config file of "key = value" lines and '#'
// comments; empty when the file or the key is absent.
std::string ConfigFileValue(const std::string& path, const std::string& key);

// The first line of a token file, without surrounding blanks. NotFound or
// PermissionDenied naming the file, InvalidArgument for an empty one.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// Fills the security fields of `options` (see the table above).
absl::Status ApplyConnectionSettings(const ConnectionFlags& flags, const Environment& env,
                                     ClientOptions* options);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_CONNECTION_H_
