#include "server/best_keeper.h"

#include <optional>
#include <utility>

#include "common/status_macros.h"

namespace tunefleet::server {

BestKeeper::BestKeeper(Store* store, BestConfigIndex* index,
                       const QuarantineList* quarantine, Clock now_unix_ms)
    : store_(store), index_(index), quarantine_(quarantine),
      now_unix_ms_(std::move(now_unix_ms)) {}

absl::StatusOr<bool> BestKeeper::Rederive(const BestRecord& meta) {
  absl::MutexLock lock(&mu_);
  return RederiveLocked(meta);
}

absl::StatusOr<RetuneVerdict> BestKeeper::RederiveFinished(const BestRecord& meta) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(KeyRows rows, LoadKey(meta.tuning_key));
  const absl::flat_hash_set<std::string> quarantined = quarantine_->Snapshot();
  RetuneVerdict verdict = JudgeRetune(rows.trials, quarantined, rows.replacing, meta.job_id);
  RETURN_IF_ERROR(Keep(meta, verdict.served, rows, quarantined).status());
  return verdict;
}

absl::StatusOr<BestKeeper::KeyRows> BestKeeper::LoadKey(const std::string& tuning_key) {
  KeyRows rows;
  ASSIGN_OR_RETURN(rows.trials, store_->ListKeyTrials(tuning_key));
  ASSIGN_OR_RETURN(std::vector<std::string> replacing, store_->ListReplacingJobs(tuning_key));
  rows.replacing.insert(replacing.begin(), replacing.end());
  return rows;
}

absl::StatusOr<bool> BestKeeper::RederiveLocked(const BestRecord& meta) {
  ASSIGN_OR_RETURN(KeyRows rows, LoadKey(meta.tuning_key));
  const absl::flat_hash_set<std::string> quarantined = quarantine_->Snapshot();
  return Keep(meta, DeriveBest(rows.trials, quarantined, rows.replacing), rows, quarantined);
}

absl::StatusOr<bool> BestKeeper::Keep(const BestRecord& meta,
                                      const std::optional<TrialRecord>& best,
                                      const KeyRows& rows,
                                      const absl::flat_hash_set<std::string>& quarantined) {
  absl::StatusOr<BestRecord> stored = store_->GetBest(meta.tuning_key);
  if (!stored.ok() && !absl::IsNotFound(stored.status())) return stored.status();
  if (!best.has_value()) {
    if (!stored.ok()) return false;
    ASSIGN_OR_RETURN(bool removed, store_->DeleteBest(meta.tuning_key));
    if (index_ != nullptr) index_->RemoveBest(meta.tuning_key);
    return removed;
  }
  BestRecord row = meta;
  row.config = best->config;
  row.median_seconds = best->median_seconds;
  row.job_id = best->job_id;
  row.evidence = EvidenceOf(rows.trials, quarantined, *best).SerializeAsString();
  const bool changed = !stored.ok() || stored->config != row.config ||
                       stored->median_seconds != row.median_seconds ||
                       stored->job_id != row.job_id || stored->evidence != row.evidence;
  if (!changed) return false;
  row.updated_unix_ms = now_unix_ms_();
  RETURN_IF_ERROR(store_->PutBest(row));
  if (index_ != nullptr) index_->ReplaceBest(row);
  return true;
}

absl::StatusOr<InvalidationResult> BestKeeper::Invalidate(const TrialFilter& filter) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Exclusion excluded, store_->ExcludeTrials(filter));
  InvalidationResult result{excluded.trials, 0, excluded.tuning_keys, excluded.principals};
  for (const std::string& key : excluded.tuning_keys) {
    absl::StatusOr<BestRecord> meta = store_->GetBest(key);
    if (absl::IsNotFound(meta.status())) continue;  // never served
    if (!meta.ok()) return meta.status();
    ASSIGN_OR_RETURN(bool changed, RederiveLocked(*meta));
    result.keys += changed;
  }
  return result;
}

}  // namespace tunefleet::server
