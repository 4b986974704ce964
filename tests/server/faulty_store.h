// FaultyStore: a real store behind switches that make some of its writes
// fail with Unavailable, as a database that is briefly unreachable does.
#ifndef TUNEFLEET_TESTS_SERVER_FAULTY_STORE_H_
#define TUNEFLEET_TESTS_SERVER_FAULTY_STORE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/store/store.h"

namespace tunefleet::server::testing {

// Thread-safety: as the wrapped store; the switches are atomic.
class FaultyStore : public Store {
 public:
  explicit FaultyStore(Store* store) : store_(store) {}

  std::atomic<bool> refuse_trials{false};  // InsertTrials
  std::atomic<bool> refuse_best{false};    // UpsertBest, PutBest, ImportBest, DeleteBest
  std::atomic<bool> refuse_jobs{false};    // PutJob
  std::atomic<bool> refuse_tokens{false};  // PutToken
  std::atomic<bool> refuse_quarantine{false};  // PutQuarantine
  std::atomic<bool> refuse_profiles{false};    // PutProfile, PutProfileRequests
  std::atomic<int> trial_writes{0};        // InsertTrials calls, refused or not
  // Runs in every InsertTrials call (after counting it); set before use.
  std::function<void()> before_trial_write;

  // A SQLite store in `dir`, and a FaultyStore over it in *faulty.
  static absl::StatusOr<std::unique_ptr<Store>> OpenSqlite(const std::string& dir,
                                                           std::unique_ptr<FaultyStore>* faulty) {
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore("sqlite://" + dir + "/store.db");
    if (store.ok()) *faulty = std::make_unique<FaultyStore>(store->get());
    return store;
  }

  absl::Status PutJob(const JobRecord& job) override {
    if (refuse_jobs) return Down();
    return store_->PutJob(job);
  }
  absl::StatusOr<JobRecord> GetJob(const std::string& id) override { return store_->GetJob(id); }
  absl::StatusOr<std::vector<JobRecord>> ListJobs(bool unfinished_only, int limit) override {
    return store_->ListJobs(unfinished_only, limit);
  }
  absl::StatusOr<std::vector<JobRecord>> QueryJobs(const JobQuery& query) override {
    return store_->QueryJobs(query);
  }
  absl::StatusOr<TrialPage> QueryTrials(const TrialQuery& query) override {
    return store_->QueryTrials(query);
  }
  absl::StatusOr<bool> ImportBest(const BestRecord& best, bool overwrite) override {
    if (refuse_best) return Down();
    return store_->ImportBest(best, overwrite);
  }
  absl::StatusOr<std::vector<bool>> InsertTrials(
      const std::vector<TrialRecord>& trials) override {
    ++trial_writes;
    if (before_trial_write) before_trial_write();
    if (refuse_trials) return Down();
    return store_->InsertTrials(trials);
  }
  absl::StatusOr<std::vector<TrialRecord>> ListTrials(const std::string& job_id) override {
    return store_->ListTrials(job_id);
  }
  absl::StatusOr<bool> UpsertBest(const BestRecord& best) override {
    if (refuse_best) return Down();
    return store_->UpsertBest(best);
  }
  absl::StatusOr<std::vector<TrialRecord>> ListKeyTrials(const std::string& key) override {
    return store_->ListKeyTrials(key);
  }
  absl::StatusOr<std::vector<std::string>> ListReplacingJobs(const std::string& key) override {
    return store_->ListReplacingJobs(key);
  }
  absl::StatusOr<Exclusion> ExcludeTrials(const TrialFilter& filter) override {
    return store_->ExcludeTrials(filter);
  }
  absl::Status PutBest(const BestRecord& best) override {
    if (refuse_best) return Down();
    return store_->PutBest(best);
  }
  absl::StatusOr<bool> DeleteBest(const std::string& key) override {
    if (refuse_best) return Down();
    return store_->DeleteBest(key);
  }
  absl::Status PutQuarantine(const QuarantineRecord& record) override {
    if (refuse_quarantine) return Down();
    return store_->PutQuarantine(record);
  }
  absl::StatusOr<bool> DeleteQuarantine(const std::string& principal) override {
    return store_->DeleteQuarantine(principal);
  }
  absl::StatusOr<std::vector<QuarantineRecord>> ListQuarantine() override {
    return store_->ListQuarantine();
  }
  absl::StatusOr<BestRecord> GetBest(const std::string& key) override {
    return store_->GetBest(key);
  }
  absl::StatusOr<std::vector<BestRecord>> ListBest(const std::string& kernel,
                                                   const std::string& model,
                                                   const std::string& toolkit) override {
    return store_->ListBest(kernel, model, toolkit);
  }
  absl::Status PutBlobs(const std::vector<BlobRecord>& blobs) override {
    return store_->PutBlobs(blobs);
  }
  absl::StatusOr<std::string> GetBlob(const std::string& digest) override {
    return store_->GetBlob(digest);
  }
  absl::Status PutKernel(const KernelRecord& kernel) override { return store_->PutKernel(kernel); }
  absl::Status PutToken(const TokenRecord& token) override {
    if (refuse_tokens) return Down();
    return store_->PutToken(token);
  }
  absl::StatusOr<std::vector<TokenRecord>> ListTokens() override { return store_->ListTokens(); }
  absl::Status PutProfile(const ProfileRecord& profile) override {
    if (refuse_profiles) return Down();
    return store_->PutProfile(profile);
  }
  absl::Status PutProfileRequests(const std::vector<ProfileRequestRecord>& requests) override {
    if (refuse_profiles) return Down();
    return store_->PutProfileRequests(requests);
  }
  absl::StatusOr<std::vector<ProfileRequestRecord>> ListProfileRequests() override {
    return store_->ListProfileRequests();
  }
  absl::StatusOr<std::vector<ProfileRecord>> ListProfiles(const std::string& job_id) override {
    return store_->ListProfiles(job_id);
  }
  absl::StatusOr<std::vector<KernelRecord>> ListKernels() override {
    return store_->ListKernels();
  }
  absl::Status CheckHealth() override { return store_->CheckHealth(); }

 private:
  static absl::Status Down() { return absl::UnavailableError("database unreachable"); }

  Store* const store_;
};

}  // namespace tunefleet::server::testing

#endif  // TUNEFLEET_TESTS_SERVER_FAULTY_STORE_H_
