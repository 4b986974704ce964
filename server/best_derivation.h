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

// Whether `candidate` is faster than `served`: the one comparison a retune
// is judged by (today the smaller median; a tie is not faster, so the best
// served stands).
bool FasterThan(const TrialRecord& candidate, const TrialRecord& served);

// The best of a key, from its OK, not excluded trials (Store::ListKeyTrials)
// that were not cut early (a cut trial's measurement is partial):
//   1. rows measured by a principal in `quarantined` are dropped;
//   2. each job with rows left offers one candidate: within the job the
//      latest round decides, as in a job itself (the verification round
//      when it has rows, else the finalists round, its interleaved, combined
//      measurement, else the search), and within that round the smallest
//      median (ties to the first stored);
//   3. jobs are ordered by when they finished (the job's last row finished
//      last; ties to the larger job id). The newest job in `replacing` (those
//      submitted with replace_best, Store::ListReplacingJobs) that offers a
//      candidate sets a floor: the jobs before it no longer count;
//   4. from the floor on (from the oldest job when there is none), a job's
//      candidate replaces the best so far only when FasterThan it.
// So a retune replaces the best only when it is faster or was submitted
// with replace_best, and excluding a job's rows gives the best the other
// jobs decide. nullopt when no row remains.
std::optional<TrialRecord> DeriveBest(const std::vector<TrialRecord>& trials,
                                      const absl::flat_hash_set<std::string>& quarantined,
                                      const absl::flat_hash_set<std::string>& replacing);

// What one job's result did to its key's best.
enum class RetuneOutcome {
  kNone,       // the job offers no candidate (no row of it counts)
  kFirst,      // no other job offers one: the job's best is served
  kReplaced,   // faster than the best without it: served now
  kRegressed,  // not faster: the best without it is kept
  kForced,     // submitted with replace_best: served whether faster or not
};

// How job `job_id`'s candidate compared with `previous`, the best DeriveBest
// gives without the job's rows; `served` is DeriveBest of every row.
struct RetuneVerdict {
  RetuneOutcome outcome = RetuneOutcome::kNone;
  std::optional<TrialRecord> job_best;
  std::optional<TrialRecord> served;
  std::optional<TrialRecord> previous;
};

// The verdict on `job_id` under the rules of DeriveBest (same arguments).
RetuneVerdict JudgeRetune(const std::vector<TrialRecord>& trials,
                          const absl::flat_hash_set<std::string>& quarantined,
                          const absl::flat_hash_set<std::string>& replacing,
                          const std::string& job_id);

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
