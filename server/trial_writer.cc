#include "server/trial_writer.h"

#include <memory>
#include <utility>

namespace tunefleet::server {
namespace {

bool Retryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kAborted;
}

}  // namespace

TrialWriter::TrialWriter(Store* store, const TrialWriterOptions& options,
                         CoordinatorMetrics* metrics)
    : store_(store),
      options_(options),
      metrics_(metrics != nullptr ? metrics : &null_metrics_) {}

absl::Status TrialWriter::Write(std::vector<TrialRecord> rows) {
  if (rows.empty()) return absl::OkStatus();
  mu_.Lock();
  std::shared_ptr<Batch> mine;
  while (mine == nullptr) {
    if (open_ == nullptr) open_ = std::make_shared<Batch>();
    const size_t after = open_->rows.size() + rows.size();
    if (open_->rows.empty() || after <= static_cast<size_t>(options_.max_batch_rows)) {
      open_->rows.insert(open_->rows.end(), std::make_move_iterator(rows.begin()),
                         std::make_move_iterator(rows.end()));
      mine = open_;
      break;
    }
    // The open batch is full: wait until a writer takes it.
    const Batch* full = open_.get();
    auto taken = [this, full]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return open_.get() != full; };
    mu_.Await(absl::Condition(&taken));
  }
  while (!mine->done) {
    if (!writing_) {
      // Nobody writes: write the open batch (which holds ours) for everyone.
      writing_ = true;
      std::shared_ptr<Batch> batch = std::move(open_);
      mu_.Unlock();
      absl::Status status = WriteWithRetries(batch->rows);
      mu_.Lock();
      batch->rows.clear();
      batch->status = std::move(status);
      batch->done = true;
      writing_ = false;
      continue;
    }
    auto ready = [this, &mine]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return mine->done || !writing_;
    };
    mu_.Await(absl::Condition(&ready));
  }
  absl::Status status = mine->status;
  mu_.Unlock();
  return status;
}

size_t TrialWriter::waiting_rows() {
  absl::MutexLock lock(&mu_);
  return open_ == nullptr ? 0 : open_->rows.size();
}

absl::Status TrialWriter::WriteWithRetries(const std::vector<TrialRecord>& rows) {
  absl::Status status;
  absl::Duration backoff = options_.backoff;
  for (int attempt = 0; attempt < std::max(1, options_.attempts); ++attempt) {
    if (attempt > 0) {
      absl::SleepFor(backoff);
      backoff *= 2;
    }
    const absl::Time start = absl::Now();
    status = store_->InsertTrials(rows).status();
    metrics_->StoreCall(absl::Now() - start);
    if (status.ok() || !Retryable(status)) break;
  }
  return status;
}

}  // namespace tunefleet::server
