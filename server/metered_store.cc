#include "server/metered_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tunefleet::server {
namespace {

constexpr absl::Duration kLogEvery = absl::Seconds(10);

const absl::Status& StatusOf(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& result) {
  return result.status();
}

// An answer about the request, not a failure of the store.
bool IsAnswer(const absl::Status& status) {
  return absl::IsNotFound(status) || absl::IsInvalidArgument(status);
}

}  // namespace

MeteredStore::MeteredStore(std::unique_ptr<Store> store, CoordinatorMetrics* metrics)
    : store_(std::move(store)), metrics_(metrics) {}

template <typename Call>
auto MeteredStore::Timed(absl::string_view operation, Call call) {
  const absl::Time start = absl::Now();
  auto result = call();
  const absl::Status& status = StatusOf(result);
  metrics_->StoreOperation(operation, status.code(), absl::Now() - start);
  if (!status.ok() && !IsAnswer(status) && operation != "CheckHealth") {
    LogFailure(operation, status);
  }
  return result;
}

void MeteredStore::LogFailure(absl::string_view operation, const absl::Status& status) {
  int64_t suppressed = 0;
  {
    absl::MutexLock lock(&mu_);
    Logged& logged = logged_[operation];
    const absl::Time now = absl::Now();
    if (now - logged.last < kLogEvery) {
      ++logged.suppressed;
      return;
    }
    logged.last = now;
    suppressed = std::exchange(logged.suppressed, 0);
  }
  spdlog::error("store {} failed: {}{}", std::string(operation), status.ToString(),
                suppressed == 0 ? ""
                                : absl::StrCat(" (and ", suppressed, " more since the last)"));
}

absl::Status MeteredStore::PutJob(const JobRecord& job) {
  return Timed("PutJob", [&] { return store_->PutJob(job); });
}

absl::StatusOr<JobRecord> MeteredStore::GetJob(const std::string& id) {
  return Timed("GetJob", [&] { return store_->GetJob(id); });
}

absl::StatusOr<std::vector<JobRecord>> MeteredStore::ListJobs(bool unfinished_only, int limit) {
  return Timed("ListJobs", [&] { return store_->ListJobs(unfinished_only, limit); });
}

absl::StatusOr<std::vector<bool>> MeteredStore::InsertTrials(const std::vector<TrialRecord>& trials) {
  return Timed("InsertTrials", [&] { return store_->InsertTrials(trials); });
}

absl::StatusOr<std::vector<TrialRecord>> MeteredStore::ListTrials(const std::string& job_id) {
  return Timed("ListTrials", [&] { return store_->ListTrials(job_id); });
}

absl::StatusOr<std::vector<TrialRecord>> MeteredStore::ListKeyTrials(const std::string& tuning_key) {
  return Timed("ListKeyTrials", [&] { return store_->ListKeyTrials(tuning_key); });
}

absl::StatusOr<std::vector<std::string>> MeteredStore::ListReplacingJobs(
    const std::string& tuning_key) {
  return Timed("ListReplacingJobs", [&] { return store_->ListReplacingJobs(tuning_key); });
}

absl::StatusOr<Exclusion> MeteredStore::ExcludeTrials(const TrialFilter& filter) {
  return Timed("ExcludeTrials", [&] { return store_->ExcludeTrials(filter); });
}

absl::StatusOr<std::vector<JobRecord>> MeteredStore::QueryJobs(const JobQuery& query) {
  return Timed("QueryJobs", [&] { return store_->QueryJobs(query); });
}

absl::StatusOr<TrialPage> MeteredStore::QueryTrials(const TrialQuery& query) {
  return Timed("QueryTrials", [&] { return store_->QueryTrials(query); });
}

absl::StatusOr<bool> MeteredStore::ImportBest(const BestRecord& best, bool overwrite) {
  return Timed("ImportBest", [&] { return store_->ImportBest(best, overwrite); });
}

absl::StatusOr<bool> MeteredStore::UpsertBest(const BestRecord& best) {
  return Timed("UpsertBest", [&] { return store_->UpsertBest(best); });
}

absl::Status MeteredStore::PutBest(const BestRecord& best) {
  return Timed("PutBest", [&] { return store_->PutBest(best); });
}

absl::StatusOr<bool> MeteredStore::DeleteBest(const std::string& tuning_key) {
  return Timed("DeleteBest", [&] { return store_->DeleteBest(tuning_key); });
}

absl::Status MeteredStore::PutQuarantine(const QuarantineRecord& record) {
  return Timed("PutQuarantine", [&] { return store_->PutQuarantine(record); });
}

absl::StatusOr<bool> MeteredStore::DeleteQuarantine(const std::string& principal) {
  return Timed("DeleteQuarantine", [&] { return store_->DeleteQuarantine(principal); });
}

absl::StatusOr<std::vector<QuarantineRecord>> MeteredStore::ListQuarantine() {
  return Timed("ListQuarantine", [&] { return store_->ListQuarantine(); });
}

absl::StatusOr<BestRecord> MeteredStore::GetBest(const std::string& tuning_key) {
  return Timed("GetBest", [&] { return store_->GetBest(tuning_key); });
}

absl::StatusOr<std::vector<BestRecord>> MeteredStore::ListBest(const std::string& kernel_name,
                                                    const std::string& device_model,
                                                    const std::string& toolkit) {
  return Timed("ListBest", [&] { return store_->ListBest(kernel_name, device_model, toolkit); });
}

absl::Status MeteredStore::PutBlobs(const std::vector<BlobRecord>& blobs) {
  return Timed("PutBlobs", [&] { return store_->PutBlobs(blobs); });
}

absl::StatusOr<std::string> MeteredStore::GetBlob(const std::string& digest) {
  return Timed("GetBlob", [&] { return store_->GetBlob(digest); });
}

absl::Status MeteredStore::PutKernel(const KernelRecord& kernel) {
  return Timed("PutKernel", [&] { return store_->PutKernel(kernel); });
}

absl::StatusOr<std::vector<KernelRecord>> MeteredStore::ListKernels() {
  return Timed("ListKernels", [&] { return store_->ListKernels(); });
}

absl::Status MeteredStore::PutToken(const TokenRecord& token) {
  return Timed("PutToken", [&] { return store_->PutToken(token); });
}

absl::StatusOr<std::vector<TokenRecord>> MeteredStore::ListTokens() {
  return Timed("ListTokens", [&] { return store_->ListTokens(); });
}

absl::Status MeteredStore::PutProfile(const ProfileRecord& profile) {
  return Timed("PutProfile", [&] { return store_->PutProfile(profile); });
}

absl::StatusOr<std::vector<ProfileRecord>> MeteredStore::ListProfiles(const std::string& job_id) {
  return Timed("ListProfiles", [&] { return store_->ListProfiles(job_id); });
}

absl::Status MeteredStore::PutProfileRequests(const std::vector<ProfileRequestRecord>& requests) {
  return Timed("PutProfileRequests", [&] { return store_->PutProfileRequests(requests); });
}

absl::StatusOr<std::vector<ProfileRequestRecord>> MeteredStore::ListProfileRequests() {
  return Timed("ListProfileRequests", [&] { return store_->ListProfileRequests(); });
}

absl::StatusOr<std::string> MeteredStore::Secret(const std::string& name,
                                                 const std::string& fresh) {
  return Timed("Secret", [&] { return store_->Secret(name, fresh); });
}

absl::Status MeteredStore::CheckHealth() {
  return Timed("CheckHealth", [&] { return store_->CheckHealth(); });
}

}  // namespace tunefleet::server
