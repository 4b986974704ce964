#include "server/best_derivation.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace tunefleet::server {
namespace {

// One job's candidate (rule 2) and when the job finished (rule 3).
struct Candidate {
  std::string job_id;
  int64_t finished_unix_ms = -1;
  const TrialRecord* best = nullptr;
};

// The rows a best may come from (rule 1 and the header's filter), but those
// of `skipped_job` (null: none).
std::vector<const TrialRecord*> Counted(const std::vector<TrialRecord>& trials,
                                        const absl::flat_hash_set<std::string>& quarantined,
                                        const std::string* skipped_job) {
  std::vector<const TrialRecord*> rows;
  for (const TrialRecord& trial : trials) {
    const bool skipped = skipped_job != nullptr && trial.job_id == *skipped_job;
    if (trial.status == 1 && !trial.excluded && !trial.cut_early &&
        !quarantined.contains(trial.principal) && !skipped) {
      rows.push_back(&trial);
    }
  }
  return rows;
}

// Each job's candidate, oldest job first. Rows come in insertion order, so a
// later row replaces a job's candidate only from a later round or with a
// strictly smaller median: ties go to the first stored.
std::vector<Candidate> Candidates(const std::vector<const TrialRecord*>& rows) {
  absl::flat_hash_map<std::string, Candidate> by_job;
  for (const TrialRecord* row : rows) {
    Candidate& job = by_job[row->job_id];
    job.job_id = row->job_id;
    job.finished_unix_ms = std::max(job.finished_unix_ms, row->finished_unix_ms);
    if (job.best == nullptr || row->round > job.best->round ||
        (row->round == job.best->round && row->median_seconds < job.best->median_seconds)) {
      job.best = row;
    }
  }
  std::vector<Candidate> jobs;
  for (auto& [id, job] : by_job) jobs.push_back(std::move(job));
  std::sort(jobs.begin(), jobs.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.finished_unix_ms, a.job_id) < std::tie(b.finished_unix_ms, b.job_id);
  });
  return jobs;
}

// Rules 3 and 4 over candidates ordered oldest first.
std::optional<TrialRecord> Decide(const std::vector<Candidate>& jobs,
                                  const absl::flat_hash_set<std::string>& replacing) {
  size_t floor = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (replacing.contains(jobs[i].job_id)) floor = i;
  }
  const TrialRecord* best = nullptr;
  for (size_t i = floor; i < jobs.size(); ++i) {
    if (best == nullptr || FasterThan(*jobs[i].best, *best)) best = jobs[i].best;
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

RetuneOutcome OutcomeOf(const RetuneVerdict& verdict, bool replacing) {
  if (!verdict.job_best.has_value()) return RetuneOutcome::kNone;
  if (!verdict.previous.has_value()) return RetuneOutcome::kFirst;
  if (replacing) return RetuneOutcome::kForced;
  return verdict.served->job_id == verdict.job_best->job_id ? RetuneOutcome::kReplaced
                                                            : RetuneOutcome::kRegressed;
}

}  // namespace

bool FasterThan(const TrialRecord& candidate, const TrialRecord& served) {
  return candidate.median_seconds < served.median_seconds;
}

std::optional<TrialRecord> DeriveBest(const std::vector<TrialRecord>& trials,
                                      const absl::flat_hash_set<std::string>& quarantined,
                                      const absl::flat_hash_set<std::string>& replacing) {
  return Decide(Candidates(Counted(trials, quarantined, /*skipped_job=*/nullptr)), replacing);
}

RetuneVerdict JudgeRetune(const std::vector<TrialRecord>& trials,
                          const absl::flat_hash_set<std::string>& quarantined,
                          const absl::flat_hash_set<std::string>& replacing,
                          const std::string& job_id) {
  const std::vector<Candidate> every =
      Candidates(Counted(trials, quarantined, /*skipped_job=*/nullptr));
  RetuneVerdict verdict;
  for (const Candidate& job : every) {
    if (job.job_id == job_id) verdict.job_best = *job.best;
  }
  verdict.served = Decide(every, replacing);
  verdict.previous = Decide(Candidates(Counted(trials, quarantined, &job_id)), replacing);
  verdict.outcome = OutcomeOf(verdict, replacing.contains(job_id));
  return verdict;
}

bool ClaimAgrees(double claimed_seconds, double verified_seconds, double tolerance) {
  return claimed_seconds >= verified_seconds / (1 + tolerance);
}

bool NeedsVerification(int claim_principals, double candidate_seconds,
                       std::optional<double> served_seconds, double margin) {
  if (claim_principals < 2) return true;
  return served_seconds.has_value() && candidate_seconds < *served_seconds / (1 + margin);
}

}  // namespace tunefleet::server
