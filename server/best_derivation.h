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
#include "server/tie_set.h"
#include "tunefleet/v1/types.pb.h"

namespace tunefleet::server {

// The tie rule's view of a stored row (server/tie_set.h).
Contender ContenderOf(const TrialRecord& row);

// Whether `candidate`, measured in another job than `served`, is faster: by
// more than the tie tolerance (served > candidate * (1 + kTieTolerance)), by
// calibrated time when both are calibrated (common/calibration.h).
// Times of different runs differ by about that much for one config, so a
// smaller gap is a tie, and a tie is not faster: the best served stands.
bool FasterThan(const TrialRecord& candidate, const TrialRecord& served);

// The best of a key, by calibrated times (common/calibration.h), from its
// OK, not excluded trials (Store::ListKeyTrials)
// that were not cut early (a cut trial's measurement is partial):
//   1. rows measured by a principal in `quarantined` are dropped;
//   2. each job with rows left decides by its latest round (the verification
//      round when it has rows, else the finalists round, its interleaved,
//      combined measurement, else the search, with its spot checks' rows,
//      TrialRound::kSpotCheck and kSpotReferee, each config then at the
//      upper median of its rows); a referee's rows
//      (TrialRound::kReferee) are part of the verification round, which
//      counts each config it measured at the upper median of its rows there
//      and in the job's finalists round (the claim): the slower of claimant
//      and verifier, the middle of three with a referee, so that no single
//      principal's number decides (server/verification.h);
//   3. jobs are ordered by when they finished (the job's last row finished
//      last; ties to the larger job id) and walked oldest first, each
//      offering one row: the member of its round's tie set (TieSetOf) chosen
//      with the best so far as the defender, i.e. the best so far's config
//      when the round measured it and found it tied (within the tie rule, or
//      within the defender's own run-to-run spread over the jobs before:
//      DefenderTolerance), else the tie set's fastest;
//   4. a job's offer becomes the best when there is none yet; when the job's
//      round measured the best so far's config (side by side, on one device:
//      the offer is that config, re-measured, or one that beat it there);
//      when it is FasterThan the best so far; or when the job is the newest
//      in `replacing` (submitted with replace_best, Store::ListReplacingJobs)
//      that offers one: that floor replaces whatever came before.
// So a retune replaces the best only when it beat it in one round, is faster
// by more than the tie tolerance, or was submitted with replace_best; a
// re-tune that finds the served config tied keeps serving it; and excluding
// a job's rows gives the best the other jobs decide. nullopt when no row
// remains.
std::optional<TrialRecord> DeriveBest(const std::vector<TrialRecord>& trials,
                                      const absl::flat_hash_set<std::string>& quarantined,
                                      const absl::flat_hash_set<std::string>& replacing);

// How sure `best` (what DeriveBest gave from the same arguments) is: the tie
// set of its job's deciding round (TieSetOf, with `best`'s config as the
// defender), the round's size, `best`'s finalist rounds and CV, and the
// counted measurements of its config over every job and round with the
// distinct devices (worker, device) that took them.
v1::BestEvidence EvidenceOf(const std::vector<TrialRecord>& trials,
                            const absl::flat_hash_set<std::string>& quarantined,
                            const TrialRecord& best);

// The defender's run-to-run tolerance: twice the coefficient of variation
// of `config`'s calibrated times in the deciding rounds of the key's jobs (one per job
// that measured it there), a fraction, at most kMaxDefenderTolerance; 0 with
// fewer than two. Different runs
// of one config differ by more than one round's noise says (different
// allocations, clocks and neighbours), and this is that difference measured.
double DefenderTolerance(const std::vector<TrialRecord>& trials,
                         const absl::flat_hash_set<std::string>& quarantined,
                         const std::string& config);

// What one job's result did to its key's best.
enum class RetuneOutcome {
  kNone,       // the job offers no candidate (no row of it counts)
  kFirst,      // no other job offers one: the job's best is served
  kReplaced,   // faster than the best without it: served now
  kRegressed,  // not faster: the best without it is kept
  kForced,     // submitted with replace_best: served whether faster or not
  kConfirmed,  // re-measured the config served before and found it tied: it
               // stays served, with this job's measurement
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
// it is not faster by more than the tolerance and the verifier's own noise,
// i.e.
//   claimed >= verified / (1 + tolerance + min(verifier_noise, tolerance)).
// `verifier_noise` (VerifierNoise) is how far the verifier's median itself
// may be off, as it measured it; it never more than doubles the tolerance, so
// a noisy verifier cannot wave through an arbitrary claim. A claim slower
// than the verification always agrees (the verifier's numbers are served
// either way). REQUIRES: tolerance >= 0, verifier_noise >= 0.
bool ClaimAgrees(double claimed_seconds, double verified_seconds, double tolerance,
                 double verifier_noise = 0);

// Two standard errors of a median measured over finalist rounds, a fraction:
// 2 * rounds_cv / sqrt(rounds); 0 with fewer than two rounds.
double VerifierNoise(const v1::Measurement& measurement);

// Whether a candidate best must be re-measured before it is served: when
// every measurement of it comes from one principal (`claim_principals` < 2),
// or when it beats the served median by more than `margin` (a fraction:
// candidate < served / (1 + margin)).
bool NeedsVerification(int claim_principals, double candidate_seconds,
                       std::optional<double> served_seconds, double margin);

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_BEST_DERIVATION_H_
