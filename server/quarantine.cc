#include "server/quarantine.h"

#include "common/status_macros.h"

namespace tunefleet::server {

QuarantineList::QuarantineList(Store* store) : store_(store) {}

absl::Status QuarantineList::Load() {
  ASSIGN_OR_RETURN(std::vector<QuarantineRecord> records, store_->ListQuarantine());
  absl::MutexLock lock(&mu_);
  for (const QuarantineRecord& record : records) principals_.insert(record.principal);
  return absl::OkStatus();
}

absl::Status QuarantineList::Add(const std::string& principal, const std::string& reason,
                                 int64_t now_unix_ms) {
  RETURN_IF_ERROR(store_->PutQuarantine({principal, reason, now_unix_ms}));
  absl::MutexLock lock(&mu_);
  principals_.insert(principal);
  return absl::OkStatus();
}

absl::StatusOr<bool> QuarantineList::Release(const std::string& principal) {
  ASSIGN_OR_RETURN(bool released, store_->DeleteQuarantine(principal));
  absl::MutexLock lock(&mu_);
  principals_.erase(principal);
  return released;
}

bool QuarantineList::Contains(const std::string& principal) const {
  absl::ReaderMutexLock lock(&mu_);
  return principals_.contains(principal);
}

absl::flat_hash_set<std::string> QuarantineList::Snapshot() const {
  absl::ReaderMutexLock lock(&mu_);
  return principals_;
}

size_t QuarantineList::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return principals_.size();
}

}  // namespace tunefleet::server
