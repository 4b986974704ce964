#include "server/stream_slots.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tunefleet::server {

StreamSlots::Slot::Slot(StreamSlots* slots, std::string principal)
    : slots_(slots), principal_(std::move(principal)) {}

StreamSlots::Slot::Slot(Slot&& other) noexcept
    : slots_(std::exchange(other.slots_, nullptr)), principal_(std::move(other.principal_)) {}

StreamSlots::Slot::~Slot() {
  if (slots_ != nullptr) slots_->Release(principal_);
}

StreamSlots::StreamSlots(int per_principal, int total)
    : per_principal_(per_principal), total_(total) {}

absl::StatusOr<StreamSlots::Slot> StreamSlots::Acquire(const std::string& principal) {
  absl::MutexLock lock(&mu_);
  if (open_total_ >= total_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the coordinator has ", total_, " watch streams open, its limit "
        "(--max-watches); poll GetJob, or try again when some end"));
  }
  int& mine = open_[principal];
  if (mine >= per_principal_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        principal.empty() ? std::string("this caller") : principal, " has ", per_principal_,
        " watch streams open, its limit (--max-watches-per-principal); close one or poll "
        "GetJob"));
  }
  ++mine;
  ++open_total_;
  return Slot(this, principal);
}

void StreamSlots::Release(const std::string& principal) {
  absl::MutexLock lock(&mu_);
  --open_total_;
  auto it = open_.find(principal);
  if (--it->second == 0) open_.erase(it);
}

int StreamSlots::open() const {
  absl::MutexLock lock(&mu_);
  return open_total_;
}

}  // namespace tunefleet::server
