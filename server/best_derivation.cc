#include "server/best_derivation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/calibration.h"

namespace tunefleet::server {
namespace {

// One job's rows of its deciding round (rule 2) and when the job finished
// (rule 3).
struct Candidate {
  std::string job_id;
  int64_t finished_unix_ms = -1;
  TrialRound round = TrialRound::kSearch;
  std::vector<const TrialRecord*> rows;       // of `round`, in insertion order
  bool spot_checked = false;                  // spot checks re-measured its search
  std::vector<const TrialRecord*> finalists;  // the job's OK finalists rows
  std::vector<const TrialRecord*> search;     // and its OK search rows
};

bool Verifying(TrialRound round) {
  return round == TrialRound::kVerify || round == TrialRound::kReferee;
}

bool SpotCheck(TrialRound round) {
  return round == TrialRound::kSpotCheck || round == TrialRound::kSpotReferee;
}

// The rows a best may come from (rule 1 and the header's filter), but those
// of `skipped_job` (null: none). A verifier's or referee's failed row stays:
// a config a verifier could not run must not win on the claimant's word.
std::vector<const TrialRecord*> Counted(const std::vector<TrialRecord>& trials,
                                        const absl::flat_hash_set<std::string>& quarantined,
                                        const std::string* skipped_job) {
  std::vector<const TrialRecord*> rows;
  for (const TrialRecord& trial : trials) {
    const bool skipped = skipped_job != nullptr && trial.job_id == *skipped_job;
    const bool measured = trial.status == 1 && !trial.cut_early;
    if ((measured || Verifying(trial.round)) && !trial.excluded &&
        !quarantined.contains(trial.principal) && !skipped) {
      rows.push_back(&trial);
    }
  }
  return rows;
}

// A row's calibrated time (common/calibration.h), for the upper median: a
// failed run is slower than any.
double TimeOf(const TrialRecord* row) {
  return row->status == 1 ? CalibratedTime(row->median_seconds, row->calibration_seconds)
                          : std::numeric_limits<double>::infinity();
}

// One row per config (in order of first appearance): of several principals'
// rows of one config, the upper median, so that no single principal's
// number decides when two measured it (the slower of two); a config whose
// upper median is a failed run is left out.
std::vector<const TrialRecord*> UpperMedians(const std::vector<const TrialRecord*>& rows) {
  std::vector<std::vector<const TrialRecord*>> by_config;
  absl::flat_hash_map<std::string, size_t> index;
  for (const TrialRecord* row : rows) {
    auto [it, added] = index.try_emplace(row->config, by_config.size());
    if (added) by_config.emplace_back();
    by_config[it->second].push_back(row);
  }
  std::vector<const TrialRecord*> medians;
  for (std::vector<const TrialRecord*>& config : by_config) {
    std::stable_sort(config.begin(), config.end(), [](const TrialRecord* a, const TrialRecord* b) {
      return TimeOf(a) < TimeOf(b);
    });
    const TrialRecord* median = config[config.size() / 2];
    if (median->status == 1) medians.push_back(median);
  }
  return medians;
}

// The verification round of `job` (rule 2): each config the verifiers
// measured, beside the claim (the job's finalists row of it, else its search
// row), at the upper median.
std::vector<const TrialRecord*> VerifiedRound(const Candidate& job) {
  absl::flat_hash_set<std::string> verified;
  for (const TrialRecord* row : job.rows) verified.insert(row->config);
  absl::flat_hash_set<std::string> claimed;
  std::vector<const TrialRecord*> rows;
  for (const std::vector<const TrialRecord*>* round : {&job.finalists, &job.search}) {
    absl::flat_hash_set<std::string> here;
    for (const TrialRecord* row : *round) {
      if (verified.contains(row->config) && !claimed.contains(row->config)) {
        rows.push_back(row);
        here.insert(row->config);
      }
    }
    claimed.insert(here.begin(), here.end());
  }
  rows.insert(rows.end(), job.rows.begin(), job.rows.end());
  return UpperMedians(rows);
}

// Each job's deciding round, oldest job first; a job whose round leaves no
// config is left out.
std::vector<Candidate> Candidates(const std::vector<const TrialRecord*>& rows) {
  absl::flat_hash_map<std::string, Candidate> by_job;
  for (const TrialRecord* row : rows) {
    Candidate& job = by_job[row->job_id];
    job.job_id = row->job_id;
    job.finished_unix_ms = std::max(job.finished_unix_ms, row->finished_unix_ms);
    // A referee's rows belong to the verification round they settle, a spot
    // check's to the search it re-measured.
    const TrialRound round = Verifying(row->round)  ? TrialRound::kVerify
                             : SpotCheck(row->round) ? TrialRound::kSearch
                                                     : row->round;
    if (row->round == TrialRound::kFinalists) job.finalists.push_back(row);
    if (round == TrialRound::kSearch) job.search.push_back(row);
    job.spot_checked = job.spot_checked || SpotCheck(row->round);
    if (job.rows.empty() || round > job.round) {
      job.round = round;
      job.rows = {row};
    } else if (round == job.round) {
      job.rows.push_back(row);
    }
  }
  std::vector<Candidate> jobs;
  for (auto& [id, job] : by_job) {
    if (job.round == TrialRound::kVerify) job.rows = VerifiedRound(job);
    // A search re-measured by spot checks counts each config at the upper
    // median of its principals' rows, as a verification does.
    if (job.round == TrialRound::kSearch && job.spot_checked) job.rows = UpperMedians(job.rows);
    if (!job.rows.empty()) jobs.push_back(std::move(job));
  }
  std::sort(jobs.begin(), jobs.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.finished_unix_ms, a.job_id) < std::tie(b.finished_unix_ms, b.job_id);
  });
  return jobs;
}

std::vector<Contender> RoundOf(const Candidate& job) {
  std::vector<Contender> round;
  round.reserve(job.rows.size());
  for (const TrialRecord* row : job.rows) round.push_back(ContenderOf(*row));
  return round;
}

// DefenderTolerance over jobs [0, end).
double ToleranceOf(const std::vector<Candidate>& jobs, size_t end, const std::string& config) {
  std::vector<double> medians;
  for (size_t i = 0; i < end; ++i) {
    for (const TrialRecord* row : jobs[i].rows) {
      if (row->config == config) medians.push_back(TimeOf(row));
    }
  }
  if (medians.size() < 2) return 0;
  double mean = 0;
  for (double median : medians) mean += median / medians.size();
  double variance = 0;
  for (double median : medians) variance += (median - mean) * (median - mean);
  variance /= static_cast<double>(medians.size() - 1);
  return mean > 0 ? std::min(2 * std::sqrt(variance) / mean, kMaxDefenderTolerance) : 0;
}

// The member of job `i`'s tie set it offers, given the config served before
// it ("" when none).
const TrialRecord* Offered(const std::vector<Candidate>& jobs, size_t i,
                           const std::string& defender) {
  const double tolerance = defender.empty() ? 0 : ToleranceOf(jobs, i, defender);
  return jobs[i].rows[TieSetOf(RoundOf(jobs[i]), defender, tolerance)->chosen];
}

bool Measured(const Candidate& job, const std::string& config) {
  return std::any_of(job.rows.begin(), job.rows.end(),
                     [&](const TrialRecord* row) { return row->config == config; });
}

// Rules 3 and 4 over candidates ordered oldest first: the best, and the row
// each job offered.
struct Decision {
  const TrialRecord* best = nullptr;
  std::vector<const TrialRecord*> offered;  // by job
};
Decision Decide(const std::vector<Candidate>& jobs,
                const absl::flat_hash_set<std::string>& replacing) {
  size_t floor = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (replacing.contains(jobs[i].job_id)) floor = i;
  }
  Decision decision;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const TrialRecord*& best = decision.best;
    const TrialRecord* offered = Offered(jobs, i, best == nullptr ? "" : best->config);
    decision.offered.push_back(offered);
    if (best == nullptr || i == floor || Measured(jobs[i], best->config) ||
        FasterThan(*offered, *best)) {
      best = offered;
    }
  }
  return decision;
}

RetuneOutcome OutcomeOf(const RetuneVerdict& verdict, bool replacing) {
  if (!verdict.job_best.has_value()) return RetuneOutcome::kNone;
  if (!verdict.previous.has_value()) return RetuneOutcome::kFirst;
  if (replacing) return RetuneOutcome::kForced;
  if (verdict.served->job_id != verdict.job_best->job_id) return RetuneOutcome::kRegressed;
  return verdict.served->config == verdict.previous->config ? RetuneOutcome::kConfirmed
                                                            : RetuneOutcome::kReplaced;
}

std::optional<TrialRecord> Copy(const TrialRecord* row) {
  if (row == nullptr) return std::nullopt;
  return *row;
}

}  // namespace

Contender ContenderOf(const TrialRecord& row) {
  return Contender{row.config, row.median_seconds, row.rounds, row.rounds_cv,
                   row.calibration_seconds};
}

bool FasterThan(const TrialRecord& candidate, const TrialRecord& served) {
  return TimeRatio(served.median_seconds, served.calibration_seconds, candidate.median_seconds,
                   candidate.calibration_seconds) > 1 + kTieTolerance;
}

std::optional<TrialRecord> DeriveBest(const std::vector<TrialRecord>& trials,
                                      const absl::flat_hash_set<std::string>& quarantined,
                                      const absl::flat_hash_set<std::string>& replacing) {
  return Copy(
      Decide(Candidates(Counted(trials, quarantined, /*skipped_job=*/nullptr)), replacing).best);
}

v1::BestEvidence EvidenceOf(const std::vector<TrialRecord>& trials,
                            const absl::flat_hash_set<std::string>& quarantined,
                            const TrialRecord& best) {
  const std::vector<const TrialRecord*> rows =
      Counted(trials, quarantined, /*skipped_job=*/nullptr);
  std::vector<Contender> round;
  absl::flat_hash_set<std::string> devices;
  v1::BestEvidence evidence;
  const std::vector<Candidate> jobs = Candidates(rows);
  double tolerance = 0;  // the defender's, as DeriveBest used it
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].job_id != best.job_id) continue;
    tolerance = ToleranceOf(jobs, i, best.config);
    round = RoundOf(jobs[i]);  // the deciding round, as DeriveBest read it
  }
  for (const TrialRecord* row : rows) {
    if (row->status == 1 && row->config == best.config) {
      evidence.set_measurements(evidence.measurements() + 1);
      devices.insert(absl::StrCat(row->worker_id, "/", row->device_id));
    }
  }
  evidence.set_devices(static_cast<int32_t>(devices.size()));
  evidence.set_configs_in_round(static_cast<int32_t>(round.size()));
  evidence.set_rounds(best.rounds);
  evidence.set_rounds_cv(best.rounds_cv);
  evidence.set_calibration_seconds(best.calibration_seconds);
  std::optional<TieSet> ties = TieSetOf(round, best.config, tolerance);
  if (!ties.has_value()) return evidence;
  const double fastest = round[ties->members.front()].time();
  for (size_t i : ties->members) {
    v1::BestEvidence::TieMember* member = evidence.add_tie_set();
    member->set_config_text(round[i].config);
    member->set_median_seconds(round[i].median_seconds);
    member->set_calibration_seconds(round[i].calibration_seconds);
    member->set_gap(fastest > 0 ? round[i].time() / fastest - 1 : 0);
  }
  return evidence;
}

RetuneVerdict JudgeRetune(const std::vector<TrialRecord>& trials,
                          const absl::flat_hash_set<std::string>& quarantined,
                          const absl::flat_hash_set<std::string>& replacing,
                          const std::string& job_id) {
  const std::vector<Candidate> every =
      Candidates(Counted(trials, quarantined, /*skipped_job=*/nullptr));
  const Decision decision = Decide(every, replacing);
  RetuneVerdict verdict;
  for (size_t i = 0; i < every.size(); ++i) {
    if (every[i].job_id == job_id) verdict.job_best = *decision.offered[i];
  }
  verdict.served = Copy(decision.best);
  verdict.previous =
      Copy(Decide(Candidates(Counted(trials, quarantined, &job_id)), replacing).best);
  verdict.outcome = OutcomeOf(verdict, replacing.contains(job_id));
  return verdict;
}

double DefenderTolerance(const std::vector<TrialRecord>& trials,
                         const absl::flat_hash_set<std::string>& quarantined,
                         const std::string& config) {
  const std::vector<Candidate> jobs =
      Candidates(Counted(trials, quarantined, /*skipped_job=*/nullptr));
  return ToleranceOf(jobs, jobs.size(), config);
}

bool ClaimAgrees(double claimed_seconds, double verified_seconds, double tolerance,
                 double verifier_noise) {
  return claimed_seconds >=
         verified_seconds / (1 + tolerance + std::min(verifier_noise, tolerance));
}

double VerifierNoise(const v1::Measurement& measurement) {
  if (measurement.rounds() < 2) return 0;
  return 2 * measurement.rounds_cv() / std::sqrt(static_cast<double>(measurement.rounds()));
}

bool NeedsVerification(int claim_principals, double candidate_seconds,
                       std::optional<double> served_seconds, double margin) {
  if (claim_principals < 2) return true;
  return served_seconds.has_value() && candidate_seconds < *served_seconds / (1 + margin);
}

}  // namespace tunefleet::server
