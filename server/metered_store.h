// MeteredStore: a Store that times every call of the store it wraps and
// counts its failures, by operation (the method's name), through
// CoordinatorMetrics, and logs failures of the store itself (not NotFound
// or InvalidArgument answers; not CheckHealth, whose changes the
// coordinator logs), at most once per operation every 10 s. It changes
// nothing else: every call, argument, result and status passes through
// untouched.
#ifndef TUNEFLEET_SERVER_METERED_STORE_H_
#define TUNEFLEET_SERVER_METERED_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "server/metrics.h"
#include "server/store/store.h"

namespace tunefleet::server {

// Thread-safety: as the wrapped store (the metrics are safe for concurrent
// use). REQUIRES: `metrics` outlives the MeteredStore.
class MeteredStore final : public Store {
 public:
  MeteredStore(std::unique_ptr<Store> store, CoordinatorMetrics* metrics);

  absl::Status PutJob(const JobRecord& job) override;
  absl::StatusOr<JobRecord> GetJob(const std::string& id) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobs(bool unfinished_only, int limit) override;
  absl::StatusOr<std::vector<bool>> InsertTrials(const std::vector<TrialRecord>& trials) override;
  absl::StatusOr<std::vector<TrialRecord>> ListTrials(const std::string& job_id) override;
  absl::StatusOr<std::vector<JobRecord>> QueryJobs(const JobQuery& query) override;
  absl::StatusOr<TrialPage> QueryTrials(const TrialQuery& query) override;
  absl::StatusOr<bool> ImportBest(const BestRecord& best, bool overwrite) override;
  absl::StatusOr<std::vector<TrialRecord>> ListKeyTrials(const std::string& tuning_key) override;
  absl::StatusOr<std::vector<std::string>> ListReplacingJobs(
      const std::string& tuning_key) override;
  absl::StatusOr<Exclusion> ExcludeTrials(const TrialFilter& filter) override;
  absl::StatusOr<bool> UpsertBest(const BestRecord& best) override;
  absl::Status PutBest(const BestRecord& best) override;
  absl::StatusOr<bool> DeleteBest(const std::string& tuning_key) override;
  absl::Status PutQuarantine(const QuarantineRecord& record) override;
  absl::StatusOr<bool> DeleteQuarantine(const std::string& principal) override;
  absl::StatusOr<std::vector<QuarantineRecord>> ListQuarantine() override;
  absl::StatusOr<BestRecord> GetBest(const std::string& tuning_key) override;
  absl::StatusOr<std::vector<BestRecord>> ListBest(const std::string& kernel_name,
                                                   const std::string& device_model,
                                                   const std::string& toolkit) override;
  absl::Status PutBlobs(const std::vector<BlobRecord>& blobs) override;
  absl::StatusOr<std::string> GetBlob(const std::string& digest) override;
  absl::Status PutKernel(const KernelRecord& kernel) override;
  absl::StatusOr<std::vector<KernelRecord>> ListKernels() override;
  absl::Status PutToken(const TokenRecord& token) override;
  absl::StatusOr<std::vector<TokenRecord>> ListTokens() override;
  absl::Status PutProfile(const ProfileRecord& profile) override;
  absl::StatusOr<std::vector<ProfileRecord>> ListProfiles(const std::string& job_id) override;
  absl::Status PutProfileRequests(const std::vector<ProfileRequestRecord>& requests) override;
  absl::StatusOr<std::vector<ProfileRequestRecord>> ListProfileRequests() override;
  absl::StatusOr<std::string> Secret(const std::string& name, const std::string& fresh) override;
  absl::Status CheckHealth() override;

 private:
  // Runs `call()` and reports it as `operation`.
  template <typename Call>
  auto Timed(absl::string_view operation, Call call);
  void LogFailure(absl::string_view operation, const absl::Status& status)
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::unique_ptr<Store> store_;
  CoordinatorMetrics* const metrics_;
  absl::Mutex mu_;
  struct Logged {
    absl::Time last;
    int64_t suppressed = 0;
  };
  absl::flat_hash_map<std::string, Logged> logged_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_METERED_STORE_H_
