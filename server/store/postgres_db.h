// The PostgreSQL layer under PostgresStore: what an exception from libpqxx
// means for the call that threw it, the leader fence, and the store's
// numbered migrations.
// Private to the store library.
#ifndef TUNEFLEET_SERVER_STORE_POSTGRES_DB_H_
#define TUNEFLEET_SERVER_STORE_POSTGRES_DB_H_

#include <cstdint>
#include <pqxx/pqxx>
#include <stdexcept>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tunefleet::server::postgres {

// What to do about an exception thrown while talking to the server.
struct Failure {
  absl::Status status;
  bool retry = false;            // worth one more attempt
  bool connection_lost = false;  // the connection must not be reused
};

// Converts the exception being handled while doing `what`: Unavailable for
// a lost connection (retried), Aborted for a serialization failure or a
// deadlock (retried), InvalidArgument for bad data, FailedPrecondition for
// FencedOut, Internal for the rest and for a commit in doubt (it may have
// happened, so it is never retried).
// REQUIRES: called inside a catch.
Failure ClassifyCurrentException(absl::string_view what);

// Thrown by CheckFence: this process does not lead the database (any more).
// ClassifyCurrentException makes it FailedPrecondition, never retried.
class FencedOut : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Locks the leader row FOR SHARE (so a takeover waits for this transaction,
// and this one for a takeover in flight) and throws FencedOut unless its
// epoch is `epoch` (leadership.h). Throws what pqxx throws.
void CheckFence(pqxx::work& txn, int64_t epoch);

// Applies the migrations the database has not had, inside `txn`, holding an
// advisory lock so that coordinators starting together migrate one at a
// time. Throws what pqxx throws.
void ApplyPendingMigrations(pqxx::work& txn);

}  // namespace tunefleet::server::postgres

#endif  // TUNEFLEET_SERVER_STORE_POSTGRES_DB_H_
