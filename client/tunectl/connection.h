// How tunectl reaches and authenticates to the coordinator. Each setting is
// taken from its flag, else the environment (the config file's contexts set
// flags: contexts.h):
//
//   setting     flag           environment
//   plaintext   --insecure     TUNEFLEET_INSECURE=1
//   CA bundle   --ca-file      TUNEFLEET_CA_FILE
//   token       --token-file   TUNEFLEET_TOKEN (the token itself),
//                              TUNEFLEET_TOKEN_FILE
//
// With no token given, ~/.config/tunefleet/token is read when it exists.
// A token is never sent over plaintext.
#ifndef TUNEFLEET_CLIENT_TUNECTL_CONNECTION_H_
#define TUNEFLEET_CLIENT_TUNECTL_CONNECTION_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "client/client_settings.h"
#include "tunefleet/client.h"

namespace tunefleet::tunectl {

struct ConnectionFlags {
  bool insecure = false;
  std::string ca_file;
  std::string token_file;
};

// The environment (std::getenv in main), the token file and its default
// place: the client library's (client/client_settings.h).
using ::tunefleet::DefaultTokenFile;
using ::tunefleet::Environment;
using ::tunefleet::IsSetting;
using ::tunefleet::IsTrueSetting;
using ::tunefleet::ReadTokenFile;

// Fills the security fields of `options` (see the table above).
absl::Status ApplyConnectionSettings(const ConnectionFlags& flags, const Environment& env,
                                     ClientOptions* options);

}  // namespace tunefleet::tunectl

#endif  // TUNEFLEET_CLIENT_TUNECTL_CONNECTION_H_
