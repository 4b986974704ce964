// SHA-256 digests as lowercase hex, the one hash used for blobs and keys.
#ifndef TUNEFLEET_COMMON_SHA256_H_
#define TUNEFLEET_COMMON_SHA256_H_

#include <string>
#include "absl/strings/string_view.h"

namespace tunefleet {

// Returns the lowercase hex SHA-256 of `data` (64 characters).
std::string Sha256Hex(absl::string_view data);

}  // namespace tunefleet

#endif  // TUNEFLEET_COMMON_SHA256_H_
