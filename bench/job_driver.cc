#include "bench/job_driver.h"

#include <grpcpp/create_channel.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace tunefleet::bench {
namespace {

constexpr absl::Duration kCallTimeout = absl::Seconds(30);

bool IsFinal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

}  // namespace

JobDriver::JobDriver(JobDriverOptions options)
    : options_(std::move(options)),
      stub_(v1::TuningService::NewStub(
          grpc::CreateChannel(options_.address, grpc::InsecureChannelCredentials()))),
      thread_([this] { Run(); }) {}

JobDriver::~JobDriver() { Stop(); }

void JobDriver::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void JobDriver::WaitUntilDone() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
}

std::string JobDriver::error() {
  absl::MutexLock lock(&mu_);
  return error_;
}

void JobDriver::Run() {
  while (!stop_.load() && absl::Now() < options_.deadline &&
         finished_.load() < options_.max_jobs) {
    if (!Refill() || !PollOldest()) break;
  }
  absl::MutexLock lock(&mu_);
  done_ = true;
}

bool JobDriver::Refill() {
  while (static_cast<int>(unfinished_.size()) < options_.in_flight &&
         submitted_.load() < options_.max_jobs) {
    v1::SubmitJobRequest request;
    *request.mutable_spec() = options_.make_job(submitted_.load());
    v1::SubmitJobResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
    grpc::Status status = stub_->SubmitJob(&context, request, &response);
    if (!status.ok()) {
      Fail("SubmitJob", status);
      return false;
    }
    submitted_.fetch_add(1);
    unfinished_.push_back(response.job().id());
  }
  return true;
}

bool JobDriver::PollOldest() {
  if (unfinished_.empty()) return true;
  v1::GetJobRequest request;
  request.set_job_id(unfinished_.front());
  v1::GetJobResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
  grpc::Status status = stub_->GetJob(&context, request, &response);
  if (!status.ok()) {
    Fail("GetJob", status);
    return false;
  }
  if (!IsFinal(response.job().state())) {
    absl::SleepFor(options_.poll_every);
    return true;
  }
  unfinished_.pop_front();
  if (response.job().state() != v1::JOB_STATE_SUCCEEDED) failed_.fetch_add(1);
  options_.on_finished(finished_.fetch_add(1) + 1);
  return true;
}

void JobDriver::Fail(const std::string& what, const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  if (error_.empty()) {
    error_ = absl::StrCat(what, ": ", status.error_code(), ": ", status.error_message());
  }
}

}  // namespace tunefleet::bench
