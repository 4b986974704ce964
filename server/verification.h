// The Verification of one job target's candidate best: before a best that
// only one principal vouches for (or that beats the served best by a wide
// margin) is served, a worker of another principal measures it again,
// interleaved with the served best, as the finalists round does.
//
// Verification is by quorum: no principal's word alone decides against
// another's. When the verifier agrees with the claim, the claim stands (two
// principals measured it). When it disagrees, that is a dispute, which a
// referee settles: a worker of a third principal measures the same configs,
// and when it agrees with one side and not the other, that side wins; the
// other side's principal (the claimants' or the verifier's) is overruled and
// quarantined when all three ran and it is far from both others (beyond the
// square of the band: no one principal's number, nor one host's noise,
// quarantines anyone). A dispute that no referee settles (none came, or it
// agreed with both sides or neither, or its run failed) quarantines nobody;
// the best counts each verified config at the upper median of the
// measurements (DeriveBest), so neither side's number alone is served. Only
// when no other principal has a device of the model may another device of
// the claimant's own principal verify: a check against a faulty device, not
// a lying host, and one that quarantines nobody.
#ifndef TUNEFLEET_SERVER_VERIFICATION_H_
#define TUNEFLEET_SERVER_VERIFICATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::server {

enum class VerifyMode {
  kOff,       // serve every job's best as found (trusting every worker)
  kAuto,      // verify; with no verifier alive, or none within `wait`, serve unverified
  kRequired,  // verify; wait for a verifier however long it takes
};

struct VerifyOptions {
  // Default kAuto.
  VerifyMode mode = VerifyMode::kAuto;
  // A candidate faster than the served best by more than this fraction is
  // verified even when several principals measured it. Default 0.10.
  double margin = 0.10;
  // The agreement rule's tolerance (ClaimAgrees): CPU timings of one config
  // on two hosts commonly differ by 10-20%. Default 0.25.
  double tolerance = 0.25;
  // kAuto: how long a candidate waits for a verifier while one is alive.
  // Default 5 s.
  absl::Duration wait = absl::Seconds(5);
};

// Who measured: a worker principal and one of its devices.
struct Measurer {
  std::string principal;
  std::string worker_id;
  std::string device_id;
  bool operator==(const Measurer&) const = default;
};

// Thread-safety: not thread-safe; owned and locked by the JobManager.
class Verification {
 public:
  enum class Outcome {
    kPending,
    kAgreed,     // the verifier agreed, or the referee sided with the claim
    kDisagreed,  // the verifier and the referee, or the claimant's own other
                 // device, contradicted the claim
    kDisputed,   // the verifier contradicted the claim and no referee settled
                 // it: none came, or it agreed with both sides or neither,
                 // or its run failed while the verifier's ran
    kUnverified, // no verifier came
  };

  // `claimants` measured `candidate` as `claimed`; `served` is the served
  // best's config in the same space, when there is one and it differs.
  // Claims and re-measurements compare by calibrated time where both are
  // calibrated (common/calibration.h).
  Verification(uint64_t candidate, v1::Measurement claimed, std::vector<Measurer> claimants,
               std::optional<uint64_t> served, absl::Time deadline);

  // A verifier is never a claimant's principal, nor one whose lease of this
  // verification ended unmeasured, and a referee never the verifier's; when `other_principal_live` is false (the fleet has
  // no device of the model under another principal) another device of a
  // claimant's principal may verify (the same host's other device: a weaker
  // check, which can catch a faulty device but not a lying host). A referee
  // is always a third principal.
  bool CanVerify(const Measurer& verifier, bool other_principal_live) const;
  bool waiting() const { return state_ == State::kWaiting; }
  bool done() const { return state_ == State::kDone; }
  // A verifier of another principal contradicted the claim: the next
  // measurement is the referee's.
  bool disputed() const { return disputed_; }
  // Moves the deadline (the referee's, once disputed).
  void set_deadline(absl::Time deadline) { deadline_ = deadline; }
  // Hands the configs to measure (candidate first) to (lease_id, epoch).
  // REQUIRES: waiting().
  std::vector<uint64_t> Take(const std::string& lease_id, int64_t epoch,
                             const std::string& verifier_principal);
  // Records a result of the lease. Returns false, changing nothing, for a
  // stale, foreign or duplicate one.
  bool Complete(uint64_t ordinal, const std::string& lease_id, int64_t epoch,
                const v1::TrialResult& result, double tolerance);
  // The lease ended before every result came: wait for a verifier (or
  // referee) again.
  void Release(const std::string& lease_id, int64_t epoch);
  // Ends the wait without a verifier (kUnverified) or, disputed, without a
  // referee (kDisputed).
  void GiveUp();

  Outcome outcome() const { return outcome_; }
  absl::Time deadline() const { return deadline_; }
  uint64_t candidate() const { return candidate_; }
  double claimed_seconds() const { return claimed_.median_seconds(); }
  // The last verifier's median of the candidate, once known.
  std::optional<double> verified_seconds() const;
  const std::vector<Measurer>& claimants() const { return claimants_; }
  // The principals of the verifier and the referee, in that order, as far
  // as they measured.
  std::vector<std::string> verifiers() const;
  // The results of the last round judged, by ordinal (empty before one).
  const absl::flat_hash_map<uint64_t, v1::TrialResult>& LastJudgedResults() const;
  // Once done: the principals whose word the referee overruled, to be
  // quarantined: the claimants' for kDisagreed, the verifier's for kAgreed,
  // each only when all three ran and it is far from both others; none
  // without a referee (nor when the claimant's own device disagreed).
  const std::vector<std::string>& Overruled() const { return overruled_; }
  // Once done: the fastest config, each at the upper median (by calibrated
  // time) of its measurements that count (the claim's, for the candidate,
  // unless the claimants were overruled; the verifiers' not overruled), a
  // failed run counting as infinitely slow, as DeriveBest reads the rows,
  // with that measurement's raw median. None for kUnverified, nor when every
  // config's upper median failed.
  std::optional<std::pair<uint64_t, double>> FastestVerified() const;

 private:
  enum class State { kWaiting, kLeased, kDone };
  // One verifier's (or the referee's) measurement of the candidate and the
  // served best.
  struct Round {
    std::string principal;
    absl::flat_hash_map<uint64_t, v1::TrialResult> results;
    bool judged = false;
    bool agreed = false;
    std::optional<double> seconds;  // the candidate's median, when it ran
  };
  bool Holds(const std::string& lease_id, int64_t epoch) const;
  bool IsClaimant(const std::string& principal) const;
  void Judge(double tolerance);
  void JudgeReferee(double tolerance);

  const uint64_t candidate_;
  const v1::Measurement claimed_;
  const std::vector<Measurer> claimants_;
  const std::optional<uint64_t> served_;
  absl::Time deadline_;
  State state_ = State::kWaiting;
  Outcome outcome_ = Outcome::kPending;
  bool disputed_ = false;
  std::vector<std::string> released_by_;  // principals whose lease ended unmeasured
  std::string lease_id_;
  int64_t epoch_ = 0;
  std::vector<Round> rounds_;  // the last one is being measured while kLeased
  std::vector<std::string> overruled_;  // decided by the referee's round
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_VERIFICATION_H_
