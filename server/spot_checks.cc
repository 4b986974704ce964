#include "server/spot_checks.h"

#include <algorithm>
#include <limits>

#include "common/calibration.h"

namespace tunefleet::server {
namespace {

// A result's time for comparisons: calibrated where `calibrated`, and a
// failure slower than any.
double TimeOf(const v1::TrialResult& result, bool calibrated) {
  if (EvidenceOf(result) != Evidence::kRan) return std::numeric_limits<double>::infinity();
  return calibrated ? CalibratedTime(result.measurement()) : result.measurement().median_seconds();
}

bool BothCalibrated(const v1::TrialResult& a, const v1::TrialResult& b) {
  return Calibrated(a.measurement().calibration_seconds()) &&
         Calibrated(b.measurement().calibration_seconds());
}

}  // namespace

Evidence EvidenceOf(const v1::TrialResult& result) {
  switch (result.status()) {
    case v1::TRIAL_STATUS_OK:
      return Evidence::kRan;
    case v1::TRIAL_STATUS_COMPILE_ERROR:
    case v1::TRIAL_STATUS_INVALID_CONFIG:
    case v1::TRIAL_STATUS_LAUNCH_ERROR:
    case v1::TRIAL_STATUS_CRASHED:
    case v1::TRIAL_STATUS_TIMEOUT:
    case v1::TRIAL_STATUS_WRONG_RESULT:
      return Evidence::kFailed;
    default:
      return Evidence::kNone;
  }
}

bool ResultsAgree(const v1::TrialResult& a, const v1::TrialResult& b, double tolerance) {
  const Evidence ea = EvidenceOf(a);
  if (ea != EvidenceOf(b)) return false;
  if (ea != Evidence::kRan) return true;  // both failed
  const bool calibrated = BothCalibrated(a, b);
  const double ta = TimeOf(a, calibrated);
  const double tb = TimeOf(b, calibrated);
  return std::max(ta, tb) <= std::min(ta, tb) * (1 + tolerance);
}

bool SpotChecks::Claim(uint64_t ordinal, const std::string& principal,
                       const v1::TrialResult& result, bool new_best, double rate,
                       double draw) {
  if (claims_.contains(ordinal) || EvidenceOf(result) == Evidence::kNone) return false;
  Claimed& claim = claims_[ordinal];
  claim.principal = principal;
  claim.result.set_status(result.status());
  *claim.result.mutable_measurement() = result.measurement();
  claim.result.set_cut_early(result.cut_early());
  if (rate <= 0) return false;
  const bool first = seen_.insert(principal).second;
  return first || new_best || suspects_.contains(principal) || draw < rate;
}

void SpotChecks::Queued(uint64_t ordinal) {
  auto it = claims_.find(ordinal);
  if (it == claims_.end()) return;
  if (it->second.state == State::kUnchecked) it->second.state = State::kQueued;
}

SpotChecks::Verdict SpotChecks::Checked(uint64_t ordinal, const std::string& principal,
                                        const v1::TrialResult& result, double tolerance) {
  auto it = claims_.find(ordinal);
  if (it == claims_.end() || principal == it->second.principal) return {};
  Claimed& claim = it->second;
  if (overruled_.contains(claim.principal)) {
    // A re-measurement of an overruled principal's claim: nothing to judge.
    if (claim.state == State::kQueued && EvidenceOf(result) != Evidence::kNone) {
      claim.state = State::kChecked;
    }
    return {};
  }
  if (claim.state == State::kQueued) {
    if (EvidenceOf(result) == Evidence::kNone) {
      claim.state = State::kUnchecked;  // the check's worker was lost: no word
      return {};
    }
    ++checks_;
    claim.checker = principal;
    claim.check = result;
    if (ResultsAgree(claim.result, result, tolerance)) {
      claim.state = State::kChecked;
      return Verdict{Verdict::Kind::kAgreed, "", {}};
    }
    ++disputes_;
    claim.state = State::kDisputed;
    return Verdict{Verdict::Kind::kDisputed, "", {claim.principal, claim.checker}};
  }
  if (claim.state != State::kDisputed || principal == claim.checker) return {};
  claim.state = State::kSettled;
  if (EvidenceOf(result) == Evidence::kNone) return Unsettle(&claim);
  // The referee sides with one side and is far from the other: beyond the
  // square of the agreement band, which one host's noise does not reach.
  const double far = (1 + tolerance) * (1 + tolerance) - 1;
  const bool with_claim =
      ResultsAgree(claim.result, result, tolerance) && !ResultsAgree(claim.check, result, far);
  const bool with_check =
      ResultsAgree(claim.check, result, tolerance) && !ResultsAgree(claim.result, result, far);
  if (!with_claim && !with_check) return Unsettle(&claim);
  const std::string& overruled = with_claim ? claim.checker : claim.principal;
  suspects_.insert(overruled);
  return Verdict{Verdict::Kind::kOverruled, overruled, {}};
}

SpotChecks::Verdict SpotChecks::Dropped(uint64_t ordinal) {
  auto it = claims_.find(ordinal);
  if (it == claims_.end()) return {};
  Claimed& claim = it->second;
  if (claim.state == State::kQueued) {
    claim.state = State::kUnchecked;
    return {};
  }
  if (claim.state != State::kDisputed) return {};
  claim.state = State::kSettled;
  return Unsettle(&claim);
}

SpotChecks::Verdict SpotChecks::Unsettle(Claimed* claim) {
  const bool calibrated = BothCalibrated(claim->result, claim->check);
  const std::string& slower = TimeOf(claim->result, calibrated) >= TimeOf(claim->check, calibrated)
                                  ? claim->principal
                                  : claim->checker;
  suspects_.insert(slower);
  return Verdict{Verdict::Kind::kUnsettled, slower, {}};
}

void SpotChecks::MarkOverruled(const std::string& principal) {
  suspects_.insert(principal);
  overruled_.insert(principal);
}

std::vector<uint64_t> SpotChecks::Unchecked(const std::string& principal) const {
  std::vector<uint64_t> unchecked;
  for (const auto& [ordinal, claim] : claims_) {
    if (claim.principal == principal && claim.state == State::kUnchecked) {
      unchecked.push_back(ordinal);
    }
  }
  std::sort(unchecked.begin(), unchecked.end());
  return unchecked;
}

std::string SpotChecks::ClaimantOf(uint64_t ordinal) const {
  auto it = claims_.find(ordinal);
  return it == claims_.end() ? "" : it->second.principal;
}

}  // namespace tunefleet::server
