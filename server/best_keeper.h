// The BestKeeper: makes the stored and indexed best config of a tuning key
// what DeriveBest gives from the key's remaining trials and the jobs
// submitted with replace_best (Store::ListReplacingJobs: the flag is a column
// of the jobs table, written with the job when it is submitted), and
// excludes trials (an invalidation, a quarantine) and derives the keys they
// touched again.
#ifndef TUNEFLEET_SERVER_BEST_KEEPER_H_
#define TUNEFLEET_SERVER_BEST_KEEPER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/best_config_index.h"
#include "server/best_derivation.h"
#include "server/quarantine.h"
#include "server/store/store.h"

namespace tunefleet::server {

// What an invalidation changed.
struct InvalidationResult {
  int64_t trials = 0;             // rows newly excluded
  int64_t keys = 0;               // keys whose best changed or was removed
  std::vector<std::string> tuning_keys;  // every key the excluded rows belonged to
  std::vector<std::string> principals;   // who measured the excluded rows
};

// Thread-safety: safe for concurrent use. Derivations run one at a time (a
// lock of their own, held across the store calls and nothing else), so two
// derivations of one key cannot store their results out of order. Nothing
// else waits on that lock.
class BestKeeper {
 public:
  using Clock = std::function<int64_t()>;  // unix ms
  // `index` may be null; everything given must outlive the keeper.
  BestKeeper(Store* store, BestConfigIndex* index, const QuarantineList* quarantine,
             Clock now_unix_ms);

  // Derives the best of `meta.tuning_key` (kernel, shape, model and toolkit
  // are taken from `meta`), stores it (replacing the stored row whatever its
  // median: the derivation already kept a faster one) and indexes it;
  // removes the key's best when no trial remains. Returns true when the
  // stored best changed. Unavailable as the store.
  absl::StatusOr<bool> Rederive(const BestRecord& meta) ABSL_LOCKS_EXCLUDED(mu_);
  // Rederive for job `meta.job_id`, which just finished, with the verdict on
  // it (JudgeRetune): whether its best replaced the best served before.
  // The verdict is derived from stored data alone, so a finish written again
  // (after the store refused it) gets the same one.
  absl::StatusOr<RetuneVerdict> RederiveFinished(const BestRecord& meta)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Excludes the trials matching `filter` and derives again the best of every
  // key they belonged to (keys without a stored best are left alone).
  // InvalidArgument for an empty filter.
  absl::StatusOr<InvalidationResult> Invalidate(const TrialFilter& filter)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // What a key's best is derived from.
  struct KeyRows {
    std::vector<TrialRecord> trials;
    absl::flat_hash_set<std::string> replacing;
  };
  absl::StatusOr<KeyRows> LoadKey(const std::string& tuning_key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<bool> RederiveLocked(const BestRecord& meta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes `best` (derived from `rows` without `quarantined`'s) the stored
  // and indexed best of `meta.tuning_key`, with its evidence (nullopt: none);
  // true when that changed anything.
  absl::StatusOr<bool> Keep(const BestRecord& meta, const std::optional<TrialRecord>& best,
                            const KeyRows& rows,
                            const absl::flat_hash_set<std::string>& quarantined)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  BestConfigIndex* const index_;
  const QuarantineList* const quarantine_;
  const Clock now_unix_ms_;
  absl::Mutex mu_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_BEST_KEEPER_H_
