#include "bench/watch_streams.h"

#include <chrono>

namespace tunefleet::bench {

// One WatchJob call: reads every event; tells its owner of its first and of
// its end. Lives until its owner is destroyed, which waits for its end.
class WatchStreams::Stream final : public grpc::ClientReadReactor<v1::WatchJobEvent> {
 public:
  Stream(v1::TuningService::Stub* stub, const std::string& job_id, WatchStreams* owner)
      : owner_(owner) {
    request_.set_job_id(job_id);
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::hours(1));
    stub->async()->WatchJob(&context_, &request_, this);
    StartRead(&event_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    if (last_ == v1::JOB_STATE_UNSPECIFIED) owner_->Opened();
    last_ = event_.job().state();
    StartRead(&event_);
  }
  void OnDone(const grpc::Status& status) override { owner_->Ended(status, last_); }
  void Cancel() { context_.TryCancel(); }

 private:
  WatchStreams* const owner_;
  grpc::ClientContext context_;
  v1::WatchJobRequest request_;
  v1::WatchJobEvent event_;
  v1::JobState last_ = v1::JOB_STATE_UNSPECIFIED;
};

WatchStreams::WatchStreams(const std::string& address,
                           const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                           int channels) {
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("tunefleet.watch_connection", i);  // a connection of its own
    stubs_.push_back(
        v1::TuningService::NewStub(grpc::CreateCustomChannel(address, credentials, args)));
  }
}

WatchStreams::~WatchStreams() {
  for (const std::unique_ptr<Stream>& stream : streams_) stream->Cancel();
  Await(0, static_cast<int>(streams_.size()), absl::InfiniteDuration());
}

void WatchStreams::Open(int count, const std::string& job_id) {
  for (int i = 0; i < count; ++i) {
    const size_t next = streams_.size();
    streams_.push_back(std::make_unique<Stream>(stubs_[next % stubs_.size()].get(), job_id, this));
  }
}

bool WatchStreams::Await(int opened, int ended, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto reached = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return opened_ >= opened && ended_ >= ended;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

int WatchStreams::opened() const {
  absl::MutexLock lock(&mu_);
  return opened_;
}

int WatchStreams::ended() const {
  absl::MutexLock lock(&mu_);
  return ended_;
}

std::map<grpc::StatusCode, int> WatchStreams::codes() const {
  absl::MutexLock lock(&mu_);
  return codes_;
}

std::map<v1::JobState, int> WatchStreams::last_states() const {
  absl::MutexLock lock(&mu_);
  return last_states_;
}

std::string WatchStreams::refusal() const {
  absl::MutexLock lock(&mu_);
  return refusal_;
}

void WatchStreams::Opened() {
  absl::MutexLock lock(&mu_);
  ++opened_;
}

void WatchStreams::Ended(const grpc::Status& status, v1::JobState last) {
  absl::MutexLock lock(&mu_);
  ++ended_;
  ++codes_[status.error_code()];
  ++last_states_[last];
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    refusal_ = status.error_message();
  }
}

}  // namespace tunefleet::bench
