// ForwardingStore: a Store that passes every call to another store, for
// wrappers that change a few of its calls (leveldb's EnvWrapper): derive
// from it and override only those. A call added to Store is added here once,
// not in every wrapper.
#ifndef TUNEFLEET_SERVER_STORE_FORWARDING_STORE_H_
#define TUNEFLEET_SERVER_STORE_FORWARDING_STORE_H_

#include <string>
#include <vector>

#include "server/store/store.h"

namespace tunefleet::server {

// Thread-safety: as the target. REQUIRES: `target` outlives the wrapper.
class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store* target) : target_(target) {}

  Store* target() const { return target_; }

  absl::Status PutJob(const JobRecord& job) override { return target_->PutJob(job); }
  absl::StatusOr<JobRecord> GetJob(const std::string& id) override {
    return target_->GetJob(id);
  }
  absl::StatusOr<std::vector<JobRecord>> ListJobs(bool unfinished_only, int limit) override {
    return target_->ListJobs(unfinished_only, limit);
  }
  absl::StatusOr<std::vector<JobRecord>> QueryJobs(const JobQuery& query) override {
    return target_->QueryJobs(query);
  }
  absl::StatusOr<std::vector<bool>> InsertTrials(
      const std::vector<TrialRecord>& trials) override {
    return target_->InsertTrials(trials);
  }
  absl::StatusOr<std::vector<TrialRecord>> ListTrials(const std::string& job_id) override {
    return target_->ListTrials(job_id);
  }
  absl::StatusOr<TrialPage> QueryTrials(const TrialQuery& query) override {
    return target_->QueryTrials(query);
  }
  absl::StatusOr<std::vector<TrialRecord>> ListKeyTrials(const std::string& tuning_key) override {
    return target_->ListKeyTrials(tuning_key);
  }
  absl::StatusOr<std::vector<std::string>> ListReplacingJobs(
      const std::string& tuning_key) override {
    return target_->ListReplacingJobs(tuning_key);
  }
  absl::StatusOr<Exclusion> ExcludeTrials(const TrialFilter& filter) override {
    return target_->ExcludeTrials(filter);
  }
  absl::StatusOr<bool> UpsertBest(const BestRecord& best) override {
    return target_->UpsertBest(best);
  }
  absl::Status PutBest(const BestRecord& best) override { return target_->PutBest(best); }
  absl::StatusOr<bool> ImportBest(const BestRecord& best, bool overwrite) override {
    return target_->ImportBest(best, overwrite);
  }
  absl::StatusOr<bool> DeleteBest(const std::string& tuning_key) override {
    return target_->DeleteBest(tuning_key);
  }
  absl::Status PutQuarantine(const QuarantineRecord& record) override {
    return target_->PutQuarantine(record);
  }
  absl::StatusOr<bool> DeleteQuarantine(const std::string& principal) override {
    return target_->DeleteQuarantine(principal);
  }
  absl::StatusOr<std::vector<QuarantineRecord>> ListQuarantine() override {
    return target_->ListQuarantine();
  }
  absl::StatusOr<BestRecord> GetBest(const std::string& tuning_key) override {
    return target_->GetBest(tuning_key);
  }
  absl::StatusOr<std::vector<BestRecord>> ListBest(const std::string& kernel_name,
                                                   const std::string& device_model,
                                                   const std::string& toolkit) override {
    return target_->ListBest(kernel_name, device_model, toolkit);
  }
  absl::Status PutBlobs(const std::vector<BlobRecord>& blobs) override {
    return target_->PutBlobs(blobs);
  }
  absl::StatusOr<std::string> GetBlob(const std::string& digest) override {
    return target_->GetBlob(digest);
  }
  absl::Status PutKernel(const KernelRecord& kernel) override {
    return target_->PutKernel(kernel);
  }
  absl::StatusOr<std::vector<KernelRecord>> ListKernels() override {
    return target_->ListKernels();
  }
  absl::Status PutToken(const TokenRecord& token) override { return target_->PutToken(token); }
  absl::StatusOr<std::vector<TokenRecord>> ListTokens() override {
    return target_->ListTokens();
  }
  absl::Status PutProfile(const ProfileRecord& profile) override {
    return target_->PutProfile(profile);
  }
  absl::StatusOr<std::vector<ProfileRecord>> ListProfiles(const std::string& job_id) override {
    return target_->ListProfiles(job_id);
  }
  absl::Status PutProfileRequests(const std::vector<ProfileRequestRecord>& requests) override {
    return target_->PutProfileRequests(requests);
  }
  absl::StatusOr<std::string> Secret(const std::string& name, const std::string& fresh) override {
    return target_->Secret(name, fresh);
  }
  absl::StatusOr<std::vector<ProfileRequestRecord>> ListProfileRequests() override {
    return target_->ListProfileRequests();
  }
  absl::Status CheckHealth() override { return target_->CheckHealth(); }

 private:
  Store* const target_;
};

}  // namespace tunefleet::server

#endif  // TUNEFLEET_SERVER_STORE_FORWARDING_STORE_H_
