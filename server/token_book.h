// The TokenBook: the bearer tokens clients authenticate with. A token is
// "tft_<id>_<secret>": the id is public (listings, revocation), the secret
// is 32 random bytes; only the SHA-256 of the whole token is stored, and the
// token itself is shown once, when it is created.
#ifndef TUNEFLEET_SERVER_TOKEN_BOOK_H_
#define TUNEFLEET_SERVER_TOKEN_BOOK_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/access_policy.h"
#include "server/store/store.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use. Lookups read memory only (they run
// on gRPC's threads before every call); changes are stored first, then
// applied to memory, so a change the store refused changes nothing.
class TokenBook {
 public:
  using Clock = std::function<absl::Time()>;
  // `store` must outlive the book.
  TokenBook(Store* store, Clock clock);

  // Reads every token from the store (once, at start-up).
  absl::Status Load();

  struct Issued {
    TokenRecord record;
    std::string token;  // shown once; never stored
  };
  // A new token for principal `name`. InvalidArgument for an empty or
  // unprintable name (at most 64 of [A-Za-z0-9._@-]) or a bad role.
  absl::StatusOr<Issued> Create(const std::string& name, Role role);
  // Revokes the token with `id`. NotFound for an unknown id.
  absl::StatusOr<TokenRecord> Revoke(const std::string& id);
  std::vector<TokenRecord> List();

  // The caller `token` authenticates, or nullopt for a token that is
  // unknown, malformed or revoked.
  std::optional<Caller> Authenticate(absl::string_view token);

  // Trusts the admin token in the file at `path`, creating the file (mode
  // 0600, never overwritten) with a new admin token named "admin" when it
  // does not exist. InvalidArgument when the file holds no token, or is
  // readable by group or others.
  absl::Status Bootstrap(const std::string& path);

 private:
  absl::Status Put(const TokenRecord& record);

  Store* const store_;
  const Clock clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, TokenRecord> by_hash_ ABSL_GUARDED_BY(mu_);
};

// Whether `name` may name a principal (see TokenBook::Create).
bool IsValidPrincipalName(absl::string_view name);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_TOKEN_BOOK_H_
