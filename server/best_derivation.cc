#include "server/best_derivation.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace tunefleet::server {
namespace {

// The newest job of `rows`: the one whose last row finished last, ties to
// the larger id.
std::string NewestJob(const std::vector<const TrialRecord*>& rows) {
  absl::flat_hash_map<std::string, int64_t> finished;
  for (const TrialRecord* row : rows) {
    int64_t& newest = finished[row->job_id];
    newest = std::max(newest, row->finished_unix_ms);
  }
  std::pair<int64_t, std::string> newest{-1, ""};
  for (const auto& [job, at] : finished) newest = std::max(newest, std::make_pair(at, job));
  return newest.second;
}

}  // namespace

std::optional<TrialRecord> DeriveBest(const std::vector<TrialRecord>& trials,
                                      const absl::flat_hash_set<std::string>& quarantined) {
  std::vector<const TrialRecord*> rows;
  for (const TrialRecord& trial : trials) {
    if (trial.status == 1 && !trial.excluded && !trial.cut_early &&
        !quarantined.contains(trial.principal)) {
      rows.push_back(&trial);
    }
  }
  if (rows.empty()) return std::nullopt;
  const std::string job = NewestJob(rows);
  TrialRound latest = TrialRound::kSearch;
  for (const TrialRecord* row : rows) {
    if (row->job_id == job) latest = std::max(latest, row->round);
  }
  const TrialRecord* best = nullptr;
  for (const TrialRecord* row : rows) {
    if (row->job_id != job || row->round != latest) continue;
    if (best == nullptr || row->median_seconds < best->median_seconds) best = row;
  }
  return *best;
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
