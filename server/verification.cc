#include "server/verification.h"

#include <algorithm>
#include <utility>

#include "server/best_derivation.h"

namespace tunefleet::server {

Verification::Verification(uint64_t candidate, double claimed_seconds,
                           std::vector<Measurer> claimants, std::optional<uint64_t> served,
                           absl::Time deadline)
    : candidate_(candidate),
      claimed_seconds_(claimed_seconds),
      claimants_(std::move(claimants)),
      served_(served == candidate ? std::nullopt : served),
      deadline_(deadline) {}

// In the fallback, the verifier's device differs from the one whose
// measurement made the claim (the last: the finalists round's when it ran).
bool Verification::CanVerify(const Measurer& verifier, bool other_principal_live) const {
  const bool claimant = std::any_of(claimants_.begin(), claimants_.end(), [&](const Measurer& c) {
    return c.principal == verifier.principal;
  });
  if (!claimant) return true;
  if (other_principal_live || claimants_.empty()) return false;
  const Measurer& decisive = claimants_.back();
  return decisive.worker_id != verifier.worker_id || decisive.device_id != verifier.device_id;
}

std::vector<uint64_t> Verification::Take(const std::string& lease_id, int64_t epoch,
                                         const std::string& verifier_principal) {
  state_ = State::kLeased;
  lease_id_ = lease_id;
  epoch_ = epoch;
  verifier_principal_ = verifier_principal;
  results_.clear();
  std::vector<uint64_t> ordinals{candidate_};
  if (served_.has_value()) ordinals.push_back(*served_);
  return ordinals;
}

bool Verification::Holds(const std::string& lease_id, int64_t epoch) const {
  return state_ == State::kLeased && lease_id == lease_id_ && epoch == epoch_;
}

bool Verification::Complete(uint64_t ordinal, const std::string& lease_id, int64_t epoch,
                            const v1::TrialResult& result, double tolerance) {
  const bool ours = ordinal == candidate_ || ordinal == served_;
  if (!Holds(lease_id, epoch) || !ours || results_.contains(ordinal)) return false;
  results_[ordinal] = result;
  if (results_.size() == (served_.has_value() ? 2u : 1u)) Judge(tolerance);
  return true;
}

// A candidate the verifier could not even run (it failed, crashed, gave a
// wrong result) disagrees with a claim that it ran.
void Verification::Judge(double tolerance) {
  state_ = State::kDone;
  const v1::TrialResult& verified = results_.at(candidate_);
  if (verified.status() != v1::TRIAL_STATUS_OK) {
    outcome_ = Outcome::kDisagreed;
    return;
  }
  verified_seconds_ = verified.measurement().median_seconds();
  outcome_ = ClaimAgrees(claimed_seconds_, *verified_seconds_, tolerance,
                         VerifierNoise(verified.measurement()))
                 ? Outcome::kAgreed
                 : Outcome::kDisagreed;
}

void Verification::Release(const std::string& lease_id, int64_t epoch) {
  if (!Holds(lease_id, epoch)) return;
  state_ = State::kWaiting;
  lease_id_.clear();
  results_.clear();
}

std::optional<std::pair<uint64_t, double>> Verification::FastestVerified() const {
  std::optional<std::pair<uint64_t, double>> fastest;
  if (state_ != State::kDone) return fastest;
  for (std::optional<uint64_t> ordinal : {std::optional<uint64_t>(candidate_), served_}) {
    if (!ordinal.has_value() || !results_.contains(*ordinal)) continue;
    const v1::TrialResult& result = results_.at(*ordinal);
    if (result.status() != v1::TRIAL_STATUS_OK) continue;
    const double seconds = result.measurement().median_seconds();
    if (!fastest.has_value() || seconds < fastest->second) fastest.emplace(*ordinal, seconds);
  }
  return fastest;
}

void Verification::GiveUp() {
  state_ = State::kDone;
  outcome_ = Outcome::kUnverified;
}

}  // namespace tunefleet::server
