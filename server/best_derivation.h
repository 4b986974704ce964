// How the best config of a tuning key is derived from its stored trials, and
// how a claimed measurement is checked against a re-measurement. Pure
// functions: the same trials always give the same best, so a best can be
// recomputed after trials are excluded.
#ifndef TUNEFLEET_SERVER_BEST_DERIVATION_H_
#define TUNEFLEET_SERVER_BEST_DERIVATION_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "server/store/store.h"

namespace tunefleet::server {

// The best of a key, from its OK, not excluded trials (Store::ListKeyTrials)
// that were not cut early (a cut trial's measurement is partial):
//   1. rows measured by a principal in `quarantined` are dropped;
//   2. the newest job decides (the job of the row finished last; ties to the
//      larger job id): a retune replaces the best whether it is faster or not;
//   3. within that job the latest round decides, as in a job itself: the
//      verification round when it has rows, else the finalists round (its
//      interleaved, combined measurement), else the search;
//   4. within that round, the smallest median (ties to the first stored).
// nullopt when no row remains.
std::optional<TrialRecord> DeriveBest(const std::vector<TrialRecord>& trials,
                                      const absl::flat_hash_set<std::string>& quarantined);

// The agreement rule: a claimed median agrees with a verifier's median when
// it is not faster by more than the tolerance, i.e.
//   claimed >= verified / (1 + tolerance).
// A claim slower than the verification always agrees (the verifier's numbers
// are served either way). REQUIRES: tolerance >= 0.
bool ClaimAgrees(double claimed_seconds, double verified_seconds, double tolerance);

// Whether a candidate best must be re-measured before it is served: when
// every measurement of it comes from one principal (`claim_principals` < 2),
// or when it beats the served median by more than `margin` (a fraction:
// candidate < served / (1 + margin)).
bool NeedsVerification(int claim_principals, double candidate_seconds,
                       std::optional<double> served_seconds, double margin);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_BEST_DERIVATION_H_
