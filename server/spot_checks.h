// SpotChecks: the search round's results of one job target, re-measured in
// samples by other principals, so that a principal cannot hide a fast config
// by reporting it slow (or failed), nor push a fake one up the ranking
// unnoticed until the finalists round.
//
// Every search result is a claim of the principal that reported it. A
// sample of the claims is checked: each principal's first result of the
// target, each result that was the target's fastest when it came, every
// result of a suspect principal, and the rest with probability `rate`. The
// check is a re-measurement by a worker of another principal. When the two
// agree (both failed, or both ran within a factor of 1 + tolerance of each
// other, by calibrated time) the claim stands. When they disagree, a referee
// of a third principal measures the config. When it agrees with one side and
// is far from the other (beyond a factor of (1 + tolerance)^2, which one
// host's noise does not reach), the other side is overruled (the JobManager
// quarantines it). A dispute that no referee settles so makes the side that
// reported slower a suspect: every one of its claims in the target is then
// re-measured by another principal. So a principal that shades its results
// is re-measured, and one that lies grossly is quarantined. A
// config ranks at the fastest of its measurements that count, so a hidden
// config comes back into the ranking once re-measured; what is served comes
// from the finalists round and the verification, which count a config at the
// slower of two principals' measurements.
#ifndef TUNEFLEET_SERVER_SPOT_CHECKS_H_
#define TUNEFLEET_SERVER_SPOT_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::server {

struct SpotCheckOptions {
  // The share of each principal's other search results that is checked;
  // 0 turns spot checks off. Default 0.1.
  double rate = 0.1;
  // Two principals' times of one config agree within a factor of
  // 1 + tolerance of each other (calibrated where both are). Search-round
  // measurements are single runs on hosts that may be busy, so the band is
  // wider than the verification's. Default 1.0 (a factor of 2).
  double tolerance = 1.0;
  // A check (or a referee's measurement) that no device of an eligible
  // principal took this long after it was queued is dropped: a dropped
  // check decides nothing, a dropped referee leaves its dispute unsettled.
  // Default 30 s.
  absl::Duration wait = absl::Seconds(30);
};

// What a measurement says of a config, for the agreement rule: it ran (OK),
// it failed (a compile error, invalid config, launch error, crash, timeout
// or wrong result), or nothing (the worker was lost; no evidence).
enum class Evidence { kRan, kFailed, kNone };
Evidence EvidenceOf(const v1::TrialResult& result);

// Whether two principals' results of one config agree: both failed, or both
// ran within a factor of 1 + tolerance of each other. REQUIRES: neither is
// kNone evidence.
bool ResultsAgree(const v1::TrialResult& a, const v1::TrialResult& b, double tolerance);

// Thread-safety: not thread-safe; owned and locked by the JobManager.
class SpotChecks {
 public:
  enum class Stage { kCheck, kReferee };

  struct Verdict {
    enum class Kind {
      kNone,       // nothing decided (no evidence, or not a check this target waits for)
      kAgreed,     // the check (or the referee) agreed with the claim
      kDisputed,   // the check disagreed: a referee of neither side decides
      kOverruled,  // the referee agreed with one side: `principal` is the other
      kUnsettled,  // no referee decided: `principal` (the slower side) is now a suspect
    };
    Kind kind = Kind::kNone;
    std::string principal;
    // kDisputed: the claimant's and the checker's principals.
    std::vector<std::string> sides;
  };

  // Records `principal`'s search result of `ordinal`, and says whether to
  // check it: the principal's first result of the target, a `new_best`, a
  // suspect's, else when `draw` (uniform in [0, 1), drawn by the caller so
  // that an insider cannot predict it) is below `rate`. A config is claimed once: a
  // second result of it (a restart's) is not recorded, and is not checked.
  bool Claim(uint64_t ordinal, const std::string& principal, const v1::TrialResult& result,
             bool new_best, double rate, double draw);
  // The check (or referee) of `ordinal` was queued.
  void Queued(uint64_t ordinal);
  // A check's (or, after a dispute, the referee's) result of `ordinal`,
  // measured by `principal`.
  Verdict Checked(uint64_t ordinal, const std::string& principal, const v1::TrialResult& result,
                  double tolerance);
  // The check of `ordinal` was dropped before it was measured: a check is
  // forgotten (the claim stands unchecked), a referee's leaves the dispute
  // kUnsettled.
  Verdict Dropped(uint64_t ordinal);
  // The claims of `principal` that no check has measured or waits for:
  // what re-measuring it takes.
  std::vector<uint64_t> Unchecked(const std::string& principal) const;
  void MarkSuspect(const std::string& principal) { suspects_.insert(principal); }
  // `principal` was overruled (and is quarantined): its claims are
  // re-measured, and a check of one settles it without a verdict.
  void MarkOverruled(const std::string& principal);
  bool IsSuspect(const std::string& principal) const { return suspects_.contains(principal); }
  // The principal whose claim `ordinal` is ("" for none).
  std::string ClaimantOf(uint64_t ordinal) const;

  int64_t checks() const { return checks_; }
  int64_t disputes() const { return disputes_; }

 private:
  enum class State { kUnchecked, kQueued, kChecked, kDisputed, kSettled };
  struct Claimed {
    std::string principal;
    v1::TrialResult result;  // status, measurement, cut_early
    State state = State::kUnchecked;
    std::string checker;
    v1::TrialResult check;
  };
  // The side of a dispute that reported slower (a failure is slower than
  // any time), made a suspect.
  Verdict Unsettle(Claimed* claim);

  absl::flat_hash_map<uint64_t, Claimed> claims_;
  absl::flat_hash_set<std::string> seen_;      // principals with a claim here
  absl::flat_hash_set<std::string> suspects_;  // every claim of theirs is checked
  absl::flat_hash_set<std::string> overruled_;  // their word counts for nothing
  int64_t checks_ = 0;
  int64_t disputes_ = 0;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_SPOT_CHECKS_H_
