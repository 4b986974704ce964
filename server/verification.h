// The Verification of one job target's candidate best: before a best that
// only one principal vouches for (or that beats the served best by a wide
// margin) is served, a worker of another principal measures it again,
// interleaved with the served best, as the finalists round does.
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
  enum class Outcome { kPending, kAgreed, kDisagreed, kUnverified };

  // `claimants` measured `candidate` at `claimed_seconds`; `served` is the
  // served best's config in the same space, when there is one and it differs.
  Verification(uint64_t candidate, double claimed_seconds, std::vector<Measurer> claimants,
               std::optional<uint64_t> served, absl::Time deadline);

  // A verifier is never a claimant's principal; when `other_principal_live`
  // is false (the fleet has no device of the model under another principal)
  // another device of a claimant's principal may verify (the same host's
  // other device: a weaker check, which can catch a faulty device but not a
  // lying host).
  bool CanVerify(const Measurer& verifier, bool other_principal_live) const;
  bool waiting() const { return state_ == State::kWaiting; }
  bool done() const { return state_ == State::kDone; }
  // Hands the configs to measure (candidate first) to (lease_id, epoch).
  // REQUIRES: waiting().
  std::vector<uint64_t> Take(const std::string& lease_id, int64_t epoch,
                             const std::string& verifier_principal);
  // Records a result of the lease. Returns false, changing nothing, for a
  // stale, foreign or duplicate one.
  bool Complete(uint64_t ordinal, const std::string& lease_id, int64_t epoch,
                const v1::TrialResult& result, double tolerance);
  // The lease ended before every result came: wait for a verifier again.
  void Release(const std::string& lease_id, int64_t epoch);
  // Ends the wait without a verifier (kUnverified).
  void GiveUp();

  Outcome outcome() const { return outcome_; }
  absl::Time deadline() const { return deadline_; }
  uint64_t candidate() const { return candidate_; }
  double claimed_seconds() const { return claimed_seconds_; }
  std::optional<double> verified_seconds() const { return verified_seconds_; }
  const std::vector<Measurer>& claimants() const { return claimants_; }
  const std::string& verifier_principal() const { return verifier_principal_; }
  // Once done: the fastest OK config of the verifier's round (what the best
  // is derived from), with its median.
  std::optional<std::pair<uint64_t, double>> FastestVerified() const;

 private:
  enum class State { kWaiting, kLeased, kDone };
  bool Holds(const std::string& lease_id, int64_t epoch) const;
  void Judge(double tolerance);

  const uint64_t candidate_;
  const double claimed_seconds_;
  const std::vector<Measurer> claimants_;
  const std::optional<uint64_t> served_;
  const absl::Time deadline_;
  State state_ = State::kWaiting;
  Outcome outcome_ = Outcome::kPending;
  std::string lease_id_;
  int64_t epoch_ = 0;
  std::string verifier_principal_;
  absl::flat_hash_map<uint64_t, v1::TrialResult> results_;
  std::optional<double> verified_seconds_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_VERIFICATION_H_
