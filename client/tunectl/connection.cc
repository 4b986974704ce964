#include "client/tunectl/connection.h"

#include <unistd.h>

#include "common/status_macros.h"

namespace tunefleet::tunectl {
namespace {

// The first non-empty of `flag` and the variable `env_name`.
std::string Resolve(const std::string& flag, const Environment& env, const char* env_name) {
  if (!flag.empty()) return flag;
  const char* value = env(env_name);
  return value != nullptr ? value : "";
}

}  // namespace

absl::Status ApplyConnectionSettings(const ConnectionFlags& flags, const Environment& env,
                                     ClientOptions* options) {
  const char* insecure_env = env("TUNEFLEET_INSECURE");
  options->insecure = flags.insecure || (insecure_env != nullptr && IsTrueSetting(insecure_env));
  options->ca_file = Resolve(flags.ca_file, env, "TUNEFLEET_CA_FILE");
  if (options->insecure) return absl::OkStatus();  // never send a token in the clear
  const char* token = env("TUNEFLEET_TOKEN");
  if (flags.token_file.empty() && token != nullptr && *token != '\0') {
    options->token = token;
    return absl::OkStatus();
  }
  std::string file = Resolve(flags.token_file, env, "TUNEFLEET_TOKEN_FILE");
  if (file.empty()) {
    file = DefaultTokenFile(env);
    if (file.empty() || access(file.c_str(), F_OK) != 0) return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(options->token, ReadTokenFile(file));
  return absl::OkStatus();
}

}  // namespace tunefleet::tunectl
