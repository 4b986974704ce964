// SpotChecks: the search round's results of one job target, re-measured in
// samples by other principals, so that a principal cannot hide a fast config
// by reporting it slow (or failed), nor push a fake one up the ranking
// unnoticed until the finalists round.
//
// Every search result is a claim of the principal that reported it. A
// sample of the claims is checked: each principal's first result of the
// target, each result that was the target's fastest when it came, every
// result of a suspect principal, and the rest with probability `rate`. The
// check is a re-measurement by a worker of another principal, and decides
// where the config ranks (Verdict::rank):
//
//  - They agree (both failed for good, or both ran within a factor of
//    1 + tolerance of each other, by calibrated time): the claim's rank
//    stands, so a checker neither raises nor buries a config, and the
//    checker vouches for it.
//  - One side failed in a way another host may not (a crash, a timeout, a
//    launch error): no verdict; a run ranks the config.
//  - They disagree: a dispute. The config ranks at the faster of the two
//    meanwhile (a hidden config reaches the finalists round, which measures
//    it side by side with the others), and a referee of a third principal
//    measures it. When the referee agrees with one side, the config ranks
//    at the faster of the two that agree, and the other side is overruled
//    (the JobManager quarantines it) when all three ran and both others
//    are far from it (beyond a factor of (1 + tolerance)^2, which one
//    host's noise does not reach), else it becomes a suspect. When the
//    referee agrees with both or neither, and when no referee comes, each
//    side has a strike, and becomes a suspect at its second (one host's
//    noise reaches past the band now and then); a referee whose own run
//    failed says nothing. Every claim of a suspect in the target is then
//    checked. Blame never follows speed alone, nor one principal's number.
//
// The ranking only chooses the finalists, which are measured side by side
// again, so it errs fast: a config ranked too high costs a finalist's
// place, one ranked too low is lost.
//
// So a principal that shades its results beyond the band is re-measured,
// and one that lies grossly, where three principals take part, is
// quarantined; what is served still comes from the finalists round and the
// verification, which count a config at the slower of two principals'.
#ifndef TUNEFLEET_SERVER_SPOT_CHECKS_H_
#define TUNEFLEET_SERVER_SPOT_CHECKS_H_

#include <cstdint>
#include <optional>
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
  // A check (or a referee's measurement) that waited this long for a device
  // of an eligible principal is dropped, and one no principal taking part
  // may take at once: a dropped check decides nothing, a dropped referee
  // leaves its dispute unsettled. A check's lease that reports nothing for
  // four times this long is taken back. Default 30 s.
  absl::Duration wait = absl::Seconds(30);
};

// What a measurement says of a config, for the agreement rule: it ran (OK);
// it failed for good (a compile error, an invalid config, a wrong result:
// any host would say so); it failed in a way another host may not (a crash,
// a timeout, a launch error, a config the worker set aside); or nothing
// (the worker was lost).
enum class Evidence { kRan, kFailed, kTransient, kNone };
Evidence EvidenceOf(const v1::TrialResult& result);

// Whether two principals' results of one config agree: both failed for
// good, or both ran within a factor of 1 + tolerance of each other.
// REQUIRES: each is kRan or kFailed evidence.
bool ResultsAgree(const v1::TrialResult& a, const v1::TrialResult& b, double tolerance);

// Thread-safety: not thread-safe; owned and locked by the JobManager.
class SpotChecks {
 public:
  // A measurement and who took it.
  struct Measured {
    v1::TrialResult result;
    std::string principal;
  };

  struct Verdict {
    enum class Kind {
      kNone,       // nothing decided (no evidence, a transient failure, not awaited)
      kAgreed,     // the check agreed with the claim
      kDisputed,   // the check disagreed: a referee of neither side decides
      kOverruled,  // the referee agreed with one side and is far from the other
      kUnsettled,  // no referee decided: `principals` (if any) became suspects now
    };
    Kind kind = Kind::kNone;
    // kDisputed: the claimant's and the checker's; kOverruled: the one
    // overruled; kUnsettled: those who became suspects.
    std::vector<std::string> principals;
    // Where the config ranks now, when that changed.
    std::optional<Measured> rank;
    // The checker's measurement counts as its principal's word for the
    // config (it agreed, or it replaced an overruled principal's claim).
    bool vouches = false;
  };

  // Records `principal`'s search result of `ordinal`, and says whether to
  // check it: the principal's first result of the target, a `new_best`, a
  // suspect's, else when `draw` (uniform in [0, 1), drawn by the caller so
  // that an insider cannot predict it) is below `rate`. A config is claimed
  // once: a second result of it is not recorded, and is not checked.
  bool Claim(uint64_t ordinal, const std::string& principal, const v1::TrialResult& result,
             bool new_best, double rate, double draw);
  // The check (or referee) of `ordinal` was queued.
  void Queued(uint64_t ordinal);
  // A check's (or, after a dispute, the referee's) result of `ordinal`,
  // measured by `principal`.
  Verdict Checked(uint64_t ordinal, const std::string& principal, const v1::TrialResult& result,
                  double tolerance);
  // The check of `ordinal` was dropped before it was measured: a check is
  // forgotten (the claim stands unchecked, and is not queued again), a
  // referee's leaves the dispute kUnsettled.
  Verdict Dropped(uint64_t ordinal);
  // The claims of `principal` that no check has measured or waits for, and
  // none was dropped: what re-measuring it takes.
  std::vector<uint64_t> Unchecked(const std::string& principal) const;
  void MarkSuspect(const std::string& principal) { suspects_.insert(principal); }
  bool IsSuspect(const std::string& principal) const { return suspects_.contains(principal); }
  // `principal` was overruled (and is quarantined): its claims are
  // re-measured, and a check of one ranks the config without a verdict.
  void MarkOverruled(const std::string& principal);
  // The measurement of `ordinal` by a principal not overruled that can rank
  // it (a run measured in full): the claim, else its check; nullopt when
  // none (the config is then measured again).
  std::optional<Measured> TrustedRank(uint64_t ordinal) const;
  bool IsOverruled(const std::string& principal) const { return overruled_.contains(principal); }


 private:
  enum class State { kUnchecked, kQueued, kChecked, kDisputed, kSettled, kDropped };
  struct Claimed {
    std::string principal;
    v1::TrialResult result;  // status, measurement, cut_early
    State state = State::kUnchecked;
    std::string checker;
    v1::TrialResult check;
  };
  // A dispute nobody settled: a strike for each side, a suspect at its
  // kStrikesToSuspect-th; the config keeps its rank.
  Verdict Unsettle(const std::vector<std::string>& sides);
  static constexpr int kStrikesToSuspect = 2;

  absl::flat_hash_map<uint64_t, Claimed> claims_;
  // Per principal, its claims not checked yet (Unchecked, without a walk).
  absl::flat_hash_map<std::string, absl::flat_hash_set<uint64_t>> unchecked_;
  absl::flat_hash_set<std::string> seen_;       // principals with a claim here
  absl::flat_hash_set<std::string> suspects_;   // every claim of theirs is checked
  absl::flat_hash_set<std::string> overruled_;  // their word counts for nothing
  absl::flat_hash_map<std::string, int> strikes_;  // disputes nobody settled, per side
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_SPOT_CHECKS_H_
