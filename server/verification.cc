#include "server/verification.h"

#include <algorithm>
#include <utility>

#include "common/calibration.h"
#include "server/best_derivation.h"

namespace tunefleet::server {

Verification::Verification(uint64_t candidate, v1::Measurement claimed,
                           std::vector<Measurer> claimants, std::optional<uint64_t> served,
                           absl::Time deadline)
    : candidate_(candidate),
      claimed_(std::move(claimed)),
      claimants_(std::move(claimants)),
      served_(served == candidate ? std::nullopt : served),
      deadline_(deadline) {}

bool Verification::IsClaimant(const std::string& principal) const {
  return std::any_of(claimants_.begin(), claimants_.end(),
                     [&](const Measurer& c) { return c.principal == principal; });
}

// In the fallback, the verifier's device differs from the one whose
// measurement made the claim (the last: the finalists round's when it ran).
bool Verification::CanVerify(const Measurer& verifier, bool other_principal_live) const {
  if (std::find(released_by_.begin(), released_by_.end(), verifier.principal) !=
      released_by_.end()) {
    return false;  // it held the round once and let it go: it cannot stall it again
  }
  if (IsClaimant(verifier.principal)) {
    if (disputed_ || other_principal_live || claimants_.empty()) return false;
    const Measurer& decisive = claimants_.back();
    return decisive.worker_id != verifier.worker_id || decisive.device_id != verifier.device_id;
  }
  return !disputed_ || verifier.principal != rounds_.front().principal;
}

std::vector<uint64_t> Verification::Take(const std::string& lease_id, int64_t epoch,
                                         const std::string& verifier_principal) {
  state_ = State::kLeased;
  lease_id_ = lease_id;
  epoch_ = epoch;
  rounds_.emplace_back().principal = verifier_principal;
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
  if (!Holds(lease_id, epoch) || !ours || rounds_.back().results.contains(ordinal)) {
    return false;
  }
  Round& round = rounds_.back();
  round.results[ordinal] = result;
  if (round.results.size() == (served_.has_value() ? 2u : 1u)) Judge(tolerance);
  return true;
}

namespace {

// a's time over b's: calibrated where both are (common/calibration.h), so
// that devices running slower or faster compare fairly.
double Ratio(const v1::Measurement& a, const v1::Measurement& b) {
  return TimeRatio(a.median_seconds(), a.calibration_seconds(), b.median_seconds(),
                   b.calibration_seconds());
}

// Within a factor of 1 + tolerance of each other, either way.
bool Near(const v1::Measurement& a, const v1::Measurement& b, double tolerance) {
  const double ratio = Ratio(a, b);
  return ratio > 0 && ratio <= 1 + tolerance && 1 / ratio <= 1 + tolerance;
}

// The agreement rule (ClaimAgrees) between a claim and a measurement of it:
// the claim is not faster beyond the tolerance and the measurer's noise. A
// claim (or a measurement) of 0 s agrees with nothing.
bool ClaimHolds(const v1::Measurement& claim, const v1::Measurement& measured, double tolerance,
                double noise = 0) {
  return ClaimAgrees(Ratio(claim, measured), 1, tolerance, noise);
}

bool Ran(const v1::TrialResult& result) { return result.status() == v1::TRIAL_STATUS_OK; }

}  // namespace

// A candidate the verifier could not even run (it failed, crashed, gave a
// wrong result) disagrees with a claim that it ran.
void Verification::Judge(double tolerance) {
  Round& round = rounds_.back();
  round.judged = true;
  lease_id_.clear();
  const v1::TrialResult& verified = round.results.at(candidate_);
  if (Ran(verified)) round.seconds = verified.measurement().median_seconds();
  if (disputed_) {
    JudgeReferee(tolerance);
    return;
  }
  round.agreed = Ran(verified) && ClaimHolds(claimed_, verified.measurement(), tolerance,
                                             VerifierNoise(verified.measurement()));
  if (round.agreed) {
    state_ = State::kDone;
    outcome_ = Outcome::kAgreed;
  } else if (!IsClaimant(round.principal)) {
    disputed_ = true;  // one principal's word against another's
    state_ = State::kWaiting;
  } else {
    state_ = State::kDone;  // the claimant's own other device: a faulty device
    outcome_ = Outcome::kDisagreed;
  }
}

// The referee settles the dispute only by agreeing with one side and not
// the other (within the band, or else within its square while the other
// side is beyond it). It overrules the other side (to be quarantined) only
// when all three ran and that side is far from both others: beyond the
// square of the band, which one host's noise does not reach. So no one
// principal's number quarantines anyone, an honest side measured on a noisy
// host is not quarantined for the noise, and a failure against runs (a race
// in the kernel, a flaky device) quarantines nobody. The rule is the spot
// checks' (server/spot_checks.h).
void Verification::JudgeReferee(double tolerance) {
  state_ = State::kDone;
  Round& referee = rounds_.back();
  const v1::TrialResult& checked = rounds_.front().results.at(candidate_);
  const v1::TrialResult& refereed = referee.results.at(candidate_);
  if (!Ran(refereed)) {
    // With the verifier when it failed too: the claim stands alone.
    outcome_ = Ran(checked) ? Outcome::kDisputed : Outcome::kDisagreed;
    return;
  }
  const v1::Measurement& measured = refereed.measurement();
  const double noise = VerifierNoise(measured);
  const double far = (1 + tolerance) * (1 + tolerance) - 1;
  bool with_claim = ClaimHolds(claimed_, measured, tolerance, noise);
  bool with_verifier = Ran(checked) && Near(checked.measurement(), measured,
                                            tolerance + std::min(noise, tolerance));
  if (!with_claim && !with_verifier) {
    // Neither within the band: a side within its square still wins when
    // the other is beyond it (a lie is rarely as close as the noise).
    with_claim = ClaimHolds(claimed_, measured, far);
    with_verifier = Ran(checked) && Near(checked.measurement(), measured, far);
  }
  if (with_claim == with_verifier) {
    outcome_ = Outcome::kDisputed;  // both or neither: the referee settles nothing
    return;
  }
  referee.agreed = with_claim;
  if (with_claim) {
    outcome_ = Outcome::kAgreed;
    const v1::Measurement& lost = checked.measurement();
    if (Ran(checked) && !Near(lost, measured, far) && !Near(lost, claimed_, far)) {
      overruled_.push_back(rounds_.front().principal);
    }
    return;
  }
  outcome_ = Outcome::kDisagreed;
  if (!ClaimHolds(claimed_, measured, far) && !ClaimHolds(claimed_, checked.measurement(), far)) {
    for (const Measurer& claimant : claimants_) {
      if (std::find(overruled_.begin(), overruled_.end(), claimant.principal) ==
          overruled_.end()) {
        overruled_.push_back(claimant.principal);
      }
    }
  }
}

void Verification::Release(const std::string& lease_id, int64_t epoch) {
  if (!Holds(lease_id, epoch)) return;
  state_ = State::kWaiting;
  lease_id_.clear();
  released_by_.push_back(rounds_.back().principal);
  rounds_.pop_back();
}

std::optional<double> Verification::verified_seconds() const {
  for (auto round = rounds_.rbegin(); round != rounds_.rend(); ++round) {
    if (round->judged) return round->seconds;
  }
  return std::nullopt;
}

const absl::flat_hash_map<uint64_t, v1::TrialResult>& Verification::LastJudgedResults() const {
  static const absl::flat_hash_map<uint64_t, v1::TrialResult> kNone;
  for (auto round = rounds_.rbegin(); round != rounds_.rend(); ++round) {
    if (round->judged) return round->results;
  }
  return kNone;
}

std::vector<std::string> Verification::verifiers() const {
  std::vector<std::string> principals;
  for (const Round& round : rounds_) {
    if (round.judged) principals.push_back(round.principal);
  }
  return principals;
}

std::optional<std::pair<uint64_t, double>> Verification::FastestVerified() const {
  if (outcome_ == Outcome::kPending || outcome_ == Outcome::kUnverified) return std::nullopt;
  const std::vector<std::string>& overruled = overruled_;
  auto counts = [&overruled](const std::string& principal) {
    return std::find(overruled.begin(), overruled.end(), principal) == overruled.end();
  };
  const bool claim_counts = std::all_of(claimants_.begin(), claimants_.end(),
                                        [&](const Measurer& c) { return counts(c.principal); });
  std::optional<uint64_t> fastest;
  const v1::Measurement* fastest_measured = nullptr;  // its upper median
  for (std::optional<uint64_t> ordinal : {std::optional<uint64_t>(candidate_), served_}) {
    if (!ordinal.has_value()) continue;
    // A run that failed counts as infinitely slow (nullptr), as DeriveBest
    // counts a failed row.
    std::vector<const v1::Measurement*> measured;
    if (*ordinal == candidate_ && claim_counts) measured.push_back(&claimed_);
    for (const Round& round : rounds_) {
      if (!round.judged || !counts(round.principal)) continue;
      auto result = round.results.find(*ordinal);
      if (result == round.results.end()) continue;
      measured.push_back(result->second.status() == v1::TRIAL_STATUS_OK
                             ? &result->second.measurement()
                             : nullptr);
    }
    if (measured.empty()) continue;
    std::sort(measured.begin(), measured.end(),
              [](const v1::Measurement* a, const v1::Measurement* b) {
                if (a == nullptr || b == nullptr) return b == nullptr && a != nullptr;
                return CalibratedTime(*a) < CalibratedTime(*b);
              });
    const v1::Measurement* upper = measured[measured.size() / 2];
    if (upper == nullptr) continue;  // its upper median failed
    if (fastest_measured == nullptr || CalibratedTime(*upper) < CalibratedTime(*fastest_measured)) {
      fastest = ordinal;
      fastest_measured = upper;
    }
  }
  if (!fastest.has_value()) return std::nullopt;
  return std::make_pair(*fastest, fastest_measured->median_seconds());
}

void Verification::GiveUp() {
  state_ = State::kDone;
  outcome_ = disputed_ ? Outcome::kDisputed : Outcome::kUnverified;
}

}  // namespace tunefleet::server
