// What of an error the service may tell its clients. Store errors carry SQL,
// file paths, host names and ports for the coordinator's log; a client gets a
// canonical code and a short message instead.
#ifndef TUNEFLEET_COMMON_PUBLIC_STATUS_H_
#define TUNEFLEET_COMMON_PUBLIC_STATUS_H_

#include <string>

#include "absl/status/status.h"

namespace tunefleet {

// True when `status` carries a store's detail: its message names the store
// the way every Store error does ("postgres: ", "sqlite: ", "SQLite database").
bool IsStoreError(const absl::Status& status);

// The message a client may see for `status`: its own message, except
//  - a store error: "store unavailable" (UNAVAILABLE), "store conflict"
//    (ABORTED), "store timed out" (DEADLINE_EXCEEDED); with another code,
//    "internal error" when the message starts with the store's name (a
//    client's own names, quoted in an INVALID_ARGUMENT, are left alone);
//  - INTERNAL, UNKNOWN, DATA_LOSS: "internal error".
// REQUIRES: !status.ok().
std::string PublicMessage(const absl::Status& status);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_PUBLIC_STATUS_H_
