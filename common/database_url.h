// Where the coordinator's database URL comes from, and how a URL is printed:
// a URL may carry a password, which must stay out of argv, logs and errors.
#ifndef TUNEFLEET_COMMON_DATABASE_URL_H_
#define TUNEFLEET_COMMON_DATABASE_URL_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tunefleet {

// The places a database URL may be given, as the coordinator found them.
struct DatabaseUrlSources {
  std::string flag;       // --database; empty when not given
  std::string file;       // --database-file; empty when not given
  std::optional<std::string> environment;  // TUNEFLEET_DATABASE, when set
};

// The URL to open, by precedence: --database, then the first line of
// --database-file, then TUNEFLEET_DATABASE; "" (the default store) when none
// is given. InvalidArgument when both flags are given or the chosen source
// is empty; NotFound when the file cannot be read; FailedPrecondition when
// the file is readable by group or others (as ssh refuses a private key).
absl::StatusOr<std::string> ResolveDatabaseUrl(const DatabaseUrlSources& sources);

// `url` with its password replaced by "***", in the userinfo
// (postgresql://user:***@host/db) and in a `password=` query parameter; a
// URL without a password is returned as it is. The one function through
// which a URL is printed.
std::string RedactUrl(absl::string_view url);

// True when `url` carries a password (see RedactUrl).
bool HasPassword(absl::string_view url);

// `text` (e.g. a database client's error about `url`, which may quote parts
// of it) with every occurrence of `url`'s password replaced by "***".
std::string RedactPasswordOf(absl::string_view url, absl::string_view text);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_DATABASE_URL_H_
