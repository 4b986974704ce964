// FaultyStore: a real store behind switches that make some of its writes
// fail with Unavailable, as a database that is briefly unreachable does;
// every other call passes through (ForwardingStore).
#ifndef TUNEFLEET_TESTS_SERVER_FAULTY_STORE_H_
#define TUNEFLEET_TESTS_SERVER_FAULTY_STORE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/store/forwarding_store.h"
#include "server/store/store.h"

namespace tunefleet::server::testing {

// Thread-safety: as the wrapped store; the switches are atomic.
class FaultyStore : public ForwardingStore {
 public:
  explicit FaultyStore(Store* store) : ForwardingStore(store) {}

  std::atomic<bool> refuse_trials{false};  // InsertTrials
  std::atomic<bool> refuse_best{false};    // UpsertBest, PutBest, ImportBest, DeleteBest
  std::atomic<bool> refuse_jobs{false};    // PutJob
  std::atomic<bool> refuse_tokens{false};  // PutToken
  std::atomic<bool> refuse_quarantine{false};  // PutQuarantine
  std::atomic<bool> refuse_profiles{false};    // PutProfile, PutProfileRequests
  std::atomic<int> trial_writes{0};        // InsertTrials calls, refused or not
  // Runs in every InsertTrials call (after counting it); set before use.
  std::function<void()> before_trial_write;

  // A private in-memory SQLite store (nothing touches a disk), and a
  // FaultyStore over it in *faulty.
  static absl::StatusOr<std::unique_ptr<Store>> OpenInMemory(
      std::unique_ptr<FaultyStore>* faulty) {
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore("sqlite://:memory:");
    if (store.ok()) *faulty = std::make_unique<FaultyStore>(store->get());
    return store;
  }

  absl::Status PutJob(const JobRecord& job) override {
    if (refuse_jobs) return Down();
    return ForwardingStore::PutJob(job);
  }
  absl::StatusOr<std::vector<bool>> InsertTrials(
      const std::vector<TrialRecord>& trials) override {
    ++trial_writes;
    if (before_trial_write) before_trial_write();
    if (refuse_trials) return Down();
    return ForwardingStore::InsertTrials(trials);
  }
  absl::StatusOr<bool> UpsertBest(const BestRecord& best) override {
    if (refuse_best) return Down();
    return ForwardingStore::UpsertBest(best);
  }
  absl::Status PutBest(const BestRecord& best) override {
    if (refuse_best) return Down();
    return ForwardingStore::PutBest(best);
  }
  absl::StatusOr<bool> ImportBest(const BestRecord& best, bool overwrite) override {
    if (refuse_best) return Down();
    return ForwardingStore::ImportBest(best, overwrite);
  }
  absl::StatusOr<bool> DeleteBest(const std::string& key) override {
    if (refuse_best) return Down();
    return ForwardingStore::DeleteBest(key);
  }
  absl::Status PutQuarantine(const QuarantineRecord& record) override {
    if (refuse_quarantine) return Down();
    return ForwardingStore::PutQuarantine(record);
  }
  absl::Status PutToken(const TokenRecord& token) override {
    if (refuse_tokens) return Down();
    return ForwardingStore::PutToken(token);
  }
  absl::Status PutProfile(const ProfileRecord& profile) override {
    if (refuse_profiles) return Down();
    return ForwardingStore::PutProfile(profile);
  }
  absl::Status PutProfileRequests(const std::vector<ProfileRequestRecord>& requests) override {
    if (refuse_profiles) return Down();
    return ForwardingStore::PutProfileRequests(requests);
  }

 private:
  static absl::Status Down() { return absl::UnavailableError("database unreachable"); }
};

}  // namespace tunefleet::server::testing

#endif  // TUNEFLEET_TESTS_SERVER_FAULTY_STORE_H_
