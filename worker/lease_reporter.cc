#include "worker/lease_reporter.h"

#include "spdlog/spdlog.h"

namespace tunefleet::worker {

LeaseReporter::LeaseReporter(Coordinator* coordinator, std::function<std::string()> worker_id,
                             const v1::Lease& lease, LeaseReporterOptions options)
    : coordinator_(coordinator),
      worker_id_(std::move(worker_id)),
      receipt_(lease.receipt()),
      options_(options),
      best_seconds_(lease.best_seconds()),
      lease_id_(lease.lease_id()),
      epoch_(lease.epoch()),
      last_report_(absl::Now()) {
  thread_ = std::thread([this] { Loop(); });
}

LeaseReporter::LeaseReporter(Coordinator* coordinator, std::string worker_id,
                             const v1::Lease& lease, LeaseReporterOptions options)
    : LeaseReporter(
          coordinator, [worker_id = std::move(worker_id)] { return worker_id; }, lease,
          options) {}

LeaseReporter::~LeaseReporter() {
  if (!finished_) Finish(/*release=*/true).IgnoreError();
}

std::string LeaseReporter::lease_id() const {
  absl::MutexLock lock(&mu_);
  return lease_id_;
}

void LeaseReporter::Add(int64_t index, const v1::TrialResult& result) {
  absl::MutexLock lock(&mu_);
  v1::ReportedTrial& trial = pending_.emplace_back();
  trial.set_index(index);
  *trial.mutable_result() = result;
}

void LeaseReporter::Loop() {
  while (true) {
    bool due = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.interval);
      if (stopping_) return;
      due = !pending_.empty() || absl::Now() - last_report_ >= options_.renew_every;
    }
    if (due && !cancelled()) Send(/*release=*/false).IgnoreError();
  }
}

absl::Status LeaseReporter::Send(bool release) {
  absl::MutexLock send_lock(&send_mu_);
  v1::ReportResultsRequest request;
  request.set_worker_id(worker_id_());
  request.set_release(release);
  request.set_receipt(receipt_);
  size_t sent = 0;
  {
    absl::MutexLock lock(&mu_);
    request.set_lease_id(lease_id_);
    request.set_epoch(epoch_);
    sent = pending_.size();
    for (const v1::ReportedTrial& trial : pending_) *request.add_trials() = trial;
  }
  absl::StatusOr<v1::ReportResultsResponse> response = coordinator_->ReportResults(request);
  absl::MutexLock lock(&mu_);
  if (!response.ok()) {
    // NotFound with a receipt: the coordinator restarted and does not know
    // this worker yet; the report under the id it registers with next is
    // adopted.
    const bool retryable = absl::IsUnavailable(response.status()) ||
                           absl::IsDeadlineExceeded(response.status()) ||
                           absl::IsResourceExhausted(response.status()) ||
                           absl::IsAborted(response.status()) ||
                           (absl::IsNotFound(response.status()) && !receipt_.empty());
    spdlog::warn("report for lease {} failed: {}", lease_id_, response.status().ToString());
    if (retryable) return response.status();
    // NotFound / FailedPrecondition: the lease is gone (expired, or the
    // coordinator restarted); its trials are someone else's now.
    cancelled_.store(true);
    pending_.clear();
    return absl::OkStatus();
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<long>(sent));
  last_report_ = absl::Now();
  if (response->best_seconds() > 0) best_seconds_.store(response->best_seconds());
  if (response->cancelled()) {
    spdlog::info("lease {} cancelled by the coordinator", lease_id_);
    cancelled_.store(true);
    pending_.clear();
  } else if (!response->lease_id().empty() &&
             (response->lease_id() != lease_id_ || response->epoch() != epoch_)) {
    spdlog::info("lease {} (epoch {}) adopted by the coordinator as lease {} (epoch {}): "
                 "{} result(s) kept",
                 lease_id_, epoch_, response->lease_id(), response->epoch(), sent);
    lease_id_ = response->lease_id();
    epoch_ = response->epoch();
  }
  return absl::OkStatus();
}

absl::Status LeaseReporter::Finish(bool release) {
  finished_ = true;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (cancelled()) return absl::OkStatus();
  absl::Status status;
  absl::Duration backoff = absl::Milliseconds(200);
  const absl::Time wait_until = absl::Now() + (receipt_.empty() ? absl::ZeroDuration()
                                                                 : options_.receipt_wait);
  const auto may_wait = [this, wait_until] {
    return absl::Now() < wait_until && (!options_.may_wait || options_.may_wait());
  };
  for (int attempt = 0; attempt < options_.final_attempts || may_wait(); ++attempt) {
    status = Send(release);
    if (status.ok()) return status;
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
  spdlog::error("lease {}: giving up the final report: {}", lease_id(), status.ToString());
  return status;
}

}  // namespace tunefleet::worker
