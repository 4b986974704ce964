#include "server/spot_checks.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "common/calibration.h"

namespace tunefleet::server {
namespace {

bool BothCalibrated(const v1::TrialResult& a, const v1::TrialResult& b) {
  return Calibrated(a.measurement().calibration_seconds()) &&
         Calibrated(b.measurement().calibration_seconds());
}

// A result's time for comparisons: calibrated where `calibrated`, and a
// failure slower than any.
double TimeOf(const v1::TrialResult& result, bool calibrated) {
  if (EvidenceOf(result) != Evidence::kRan) return std::numeric_limits<double>::infinity();
  return calibrated ? CalibratedTime(result.measurement()) : result.measurement().median_seconds();
}

// The slower (or, `faster`, the faster) of two measurements, where at least
// one ran; nullopt when neither did.
std::optional<SpotChecks::Measured> Pick(const SpotChecks::Measured& a,
                                         const SpotChecks::Measured& b, bool faster) {
  const bool a_ran = EvidenceOf(a.result) == Evidence::kRan;
  const bool b_ran = EvidenceOf(b.result) == Evidence::kRan;
  if (!a_ran && !b_ran) return std::nullopt;
  if (!a_ran) return faster ? std::optional(b) : std::nullopt;
  if (!b_ran) return faster ? std::optional(a) : std::nullopt;
  const bool calibrated = BothCalibrated(a.result, b.result);
  const bool a_first = TimeOf(a.result, calibrated) <= TimeOf(b.result, calibrated);
  return a_first == faster ? a : b;
}

}  // namespace

Evidence EvidenceOf(const v1::TrialResult& result) {
  switch (result.status()) {
    case v1::TRIAL_STATUS_OK:
      return Evidence::kRan;
    case v1::TRIAL_STATUS_COMPILE_ERROR:
    case v1::TRIAL_STATUS_INVALID_CONFIG:
    case v1::TRIAL_STATUS_WRONG_RESULT:
      return Evidence::kFailed;
    case v1::TRIAL_STATUS_LAUNCH_ERROR:
    case v1::TRIAL_STATUS_CRASHED:
    case v1::TRIAL_STATUS_TIMEOUT:
    case v1::TRIAL_STATUS_QUARANTINED:
      return Evidence::kTransient;
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
                       const v1::TrialResult& result, bool new_best, double rate, double draw) {
  if (claims_.contains(ordinal) || EvidenceOf(result) == Evidence::kNone) return false;
  Claimed& claim = claims_[ordinal];
  claim.principal = principal;
  claim.result.set_status(result.status());
  *claim.result.mutable_measurement() = result.measurement();
  claim.result.set_cut_early(result.cut_early());
  unchecked_[principal].insert(ordinal);
  if (rate <= 0) return false;
  const bool first = seen_.insert(principal).second;
  return first || new_best || suspects_.contains(principal) || draw < rate;
}

void SpotChecks::Queued(uint64_t ordinal) {
  auto it = claims_.find(ordinal);
  if (it == claims_.end()) return;
  Claimed& claim = it->second;
  // An overruled principal's claim is measured again whatever was done of it.
  if (claim.state != State::kUnchecked &&
      !(overruled_.contains(claim.principal) && claim.state != State::kQueued)) {
    return;
  }
  claim.state = State::kQueued;
  unchecked_[claim.principal].erase(ordinal);
}

SpotChecks::Verdict SpotChecks::Checked(uint64_t ordinal, const std::string& principal,
                                        const v1::TrialResult& result, double tolerance) {
  auto it = claims_.find(ordinal);
  if (it == claims_.end() || principal == it->second.principal) return {};
  Claimed& claim = it->second;
  const Evidence evidence = EvidenceOf(result);
  const Measured checked{result, principal};
  if (claim.state == State::kQueued && evidence == Evidence::kNone) {
    claim.state = State::kUnchecked;  // the check's worker was lost: no word
    unchecked_[claim.principal].insert(ordinal);
    return {};
  }
  if (overruled_.contains(claim.principal)) {
    // A re-measurement of an overruled principal's claim: it ranks the
    // config in the claim's place.
    if (claim.state != State::kQueued) return {};
    claim.state = State::kChecked;
    Verdict verdict;
    verdict.vouches = evidence == Evidence::kRan;
    if (verdict.vouches) verdict.rank = checked;
    return verdict;
  }
  const Measured claimed{claim.result, claim.principal};
  if (claim.state == State::kQueued) {
    claim.checker = principal;
    claim.check = result;
    if (EvidenceOf(claim.result) == Evidence::kTransient || evidence == Evidence::kTransient) {
      // A crash or a timeout on one host says little of another's run: a
      // run ranks the config, and nobody is blamed.
      claim.state = State::kChecked;
      Verdict verdict;
      if (evidence == Evidence::kRan && EvidenceOf(claim.result) != Evidence::kRan) {
        verdict.rank = checked;
        verdict.vouches = true;
      }
      return verdict;
    }
    if (ResultsAgree(claim.result, result, tolerance)) {
      // The claim's rank stands: an agreeing check neither raises nor buries it.
      claim.state = State::kChecked;
      return Verdict{Verdict::Kind::kAgreed, {}, std::nullopt, true};
    }
    claim.state = State::kDisputed;
    return Verdict{Verdict::Kind::kDisputed,
                   {claim.principal, claim.checker},
                   Pick(claimed, checked, /*faster=*/true),
                   false};
  }
  if (claim.state != State::kDisputed || principal == claim.checker) return {};
  claim.state = State::kSettled;
  if (evidence != Evidence::kRan && evidence != Evidence::kFailed) {
    // The referee's own run failed, or its worker was lost: it says nothing,
    // and nobody has a strike for it.
    return Verdict{Verdict::Kind::kUnsettled, {}, std::nullopt, false};
  }
  const bool with_claim = ResultsAgree(claim.result, result, tolerance);
  const bool with_check = ResultsAgree(claim.check, result, tolerance);
  if (with_claim == with_check) return Unsettle({claim.principal, claim.checker});
  const Measured winner = with_claim ? claimed : Measured{claim.check, claim.checker};
  const std::string& loser = with_claim ? claim.checker : claim.principal;
  const v1::TrialResult& lost = with_claim ? claim.check : claim.result;
  suspects_.insert(loser);
  // The loser is overruled only when both others ran and are far from it:
  // beyond the square of the band, which one host's noise does not reach,
  // so that no one principal's number (the referee's) quarantines anyone. A
  // failure against runs (a race in the kernel, a flaky device) is suspected.
  const double far = (1 + tolerance) * (1 + tolerance) - 1;
  const bool overruled = EvidenceOf(lost) == Evidence::kRan &&
                         EvidenceOf(winner.result) == Evidence::kRan &&
                         evidence == Evidence::kRan && !ResultsAgree(lost, result, far) &&
                         !ResultsAgree(lost, winner.result, far);
  Verdict verdict;
  verdict.kind = overruled ? Verdict::Kind::kOverruled : Verdict::Kind::kUnsettled;
  verdict.principals = {loser};
  verdict.rank = Pick(winner, checked, /*faster=*/true);
  return verdict;
}

std::optional<SpotChecks::Measured> SpotChecks::TrustedRank(uint64_t ordinal) const {
  auto it = claims_.find(ordinal);
  if (it == claims_.end()) return std::nullopt;
  const Claimed& claim = it->second;
  if (!overruled_.contains(claim.principal) && EvidenceOf(claim.result) == Evidence::kRan &&
      !claim.result.cut_early()) {
    return Measured{claim.result, claim.principal};
  }
  if (!claim.checker.empty() && !overruled_.contains(claim.checker) &&
      EvidenceOf(claim.check) == Evidence::kRan && !claim.check.cut_early()) {
    return Measured{claim.check, claim.checker};
  }
  return std::nullopt;
}

SpotChecks::Verdict SpotChecks::Dropped(uint64_t ordinal) {
  auto it = claims_.find(ordinal);
  if (it == claims_.end()) return {};
  Claimed& claim = it->second;
  if (claim.state == State::kQueued) {
    claim.state = State::kDropped;  // not queued again: it could not be taken
    return {};
  }
  if (claim.state != State::kDisputed) return {};
  claim.state = State::kSettled;
  return Unsettle({claim.principal, claim.checker});
}

SpotChecks::Verdict SpotChecks::Unsettle(const std::vector<std::string>& sides) {
  // One host's noise can reach past the band now and then: a side becomes a
  // suspect at its second dispute nobody settled.
  std::vector<std::string> suspects;
  for (const std::string& side : sides) {
    if (++strikes_[side] >= kStrikesToSuspect && suspects_.insert(side).second) {
      suspects.push_back(side);
    }
  }
  // The config keeps the rank the dispute gave it: the faster of the two.
  return Verdict{Verdict::Kind::kUnsettled, std::move(suspects), std::nullopt, false};
}

void SpotChecks::MarkOverruled(const std::string& principal) {
  suspects_.insert(principal);
  overruled_.insert(principal);
}

std::vector<uint64_t> SpotChecks::Unchecked(const std::string& principal) const {
  auto it = unchecked_.find(principal);
  if (it == unchecked_.end()) return {};
  std::vector<uint64_t> unchecked(it->second.begin(), it->second.end());
  std::sort(unchecked.begin(), unchecked.end());
  return unchecked;
}

}  // namespace tunefleet::server
