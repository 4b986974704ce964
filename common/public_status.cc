#include "common/public_status.h"

#include "absl/strings/match.h"

namespace tunefleet {

bool IsStoreError(const absl::Status& status) {
  const absl::string_view message = status.message();
  return absl::StrContains(message, "postgres: ") || absl::StrContains(message, "sqlite: ") ||
         absl::StrContains(message, "SQLite database");
}

std::string PublicMessage(const absl::Status& status) {
  const bool store = IsStoreError(status);
  switch (status.code()) {
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss: return "internal error";
    case absl::StatusCode::kUnavailable:
      if (store) return "store unavailable";
      break;
    case absl::StatusCode::kAborted:
      if (store) return "store conflict";
      break;
    case absl::StatusCode::kDeadlineExceeded:
      if (store) return "store timed out";
      break;
    default:
      // Only a store's own message (the PostgreSQL store's refusal of
      // invalid text): a client's names may hold the same words.
      if (absl::StartsWith(status.message(), "postgres: ") ||
          absl::StartsWith(status.message(), "sqlite: ")) {
        return "internal error";
      }
  }
  return std::string(status.message());
}

}  // namespace tunefleet
