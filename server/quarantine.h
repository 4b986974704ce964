// The QuarantineList: the worker principals whose results are refused, kept
// in the store (they survive a restart) and mirrored in memory so that every
// LeaseWork and ReportResults can check it without the database.
#ifndef TUNEFLEET_SERVER_QUARANTINE_H_
#define TUNEFLEET_SERVER_QUARANTINE_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/store/store.h"

namespace tunefleet::server {

// Thread-safety: safe for concurrent use. The lock guards only the memory
// copy and is never held across a store call; a change is stored first and
// then made in memory, so memory never claims what the store does not hold.
class QuarantineList {
 public:
  // `store` must outlive the list.
  explicit QuarantineList(Store* store);

  // Reads the stored quarantine (once, at start-up). Unavailable as the store.
  absl::Status Load();
  // Quarantines `principal` (replacing an earlier reason).
  absl::Status Add(const std::string& principal, const std::string& reason,
                   int64_t now_unix_ms);
  // Lifts a quarantine; false when the principal was not quarantined.
  absl::StatusOr<bool> Release(const std::string& principal);
  bool Contains(const std::string& principal) const;
  // The quarantined principals, for derivations.
  absl::flat_hash_set<std::string> Snapshot() const;
  size_t size() const;

 private:
  Store* const store_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> principals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_QUARANTINE_H_
