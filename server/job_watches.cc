#include "server/job_watches.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "common/grpc_status.h"
#include "server/job_repository.h"

namespace tunefleet::server {
namespace {

// What a stream has been sent: nothing yet, or the stored view of a job not
// yet live. Live versions are >= 0.
constexpr int64_t kNothing = -1;
constexpr int64_t kStored = -2;

// A job stored but not live yet (being submitted or resumed) is looked up
// again this often.
constexpr absl::Duration kStoredRetry = absl::Milliseconds(100);

using Event = std::shared_ptr<const v1::WatchJobEvent>;

// A call answered at once with `status`.
class Refusal final : public grpc::ServerWriteReactor<v1::WatchJobEvent> {
 public:
  explicit Refusal(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

// One open WatchJob call. It owns itself (`self_`) until gRPC is done with
// it; the pump may hold it longer, but touches gRPC only while it is not
// finished. One write is in flight at a time: a view that comes meanwhile
// replaces the one waiting, so a slow reader gets the latest, not a backlog.
class JobWatches::Stream final : public grpc::ServerWriteReactor<v1::WatchJobEvent> {
 public:
  Stream(JobWatches* owner, std::string job_id, StreamSlots::Slot slot)
      : owner_(owner), job_id_(std::move(job_id)), slot_(std::move(slot)) {}

  void Own(std::shared_ptr<Stream> self) { self_ = std::move(self); }

  const std::string& job_id() const { return job_id_; }

  // What was queued last: kNothing, kStored or a live version.
  int64_t version() const {
    absl::MutexLock lock(&mu_);
    return version_;
  }

  // True once it writes nothing more: finished, or its last view (or its
  // end) queued.
  bool settled() const {
    absl::MutexLock lock(&mu_);
    return ended_ || cancelled_ || finish_after_.has_value();
  }

  // Writes `event` (the view at `version`), then finishes OK when `last`.
  void Send(Event event, int64_t version, bool last) {
    const v1::WatchJobEvent* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (ended_ || cancelled_ || finish_after_.has_value()) return;
      version_ = version;
      if (last) finish_after_ = grpc::Status::OK;
      if (writing_) {
        waiting_ = std::move(event);
        return;
      }
      writing_ = true;
      in_flight_ = std::move(event);
      next = in_flight_.get();
    }
    StartWrite(next);
  }

  // Finishes with `status` once the write in flight is done.
  void End(grpc::Status status) {
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
      if (writing_) {
        // A final view already queued ends it as it would have (OK).
        if (!finish_after_.has_value()) {
          waiting_.reset();
          finish_after_ = std::move(status);
        }
        return;
      }
      ended_ = true;
    }
    Finish(std::move(status));
  }

  void OnWriteDone(bool ok) override {
    std::optional<grpc::Status> finish;
    const v1::WatchJobEvent* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      in_flight_.reset();
      if (ended_) return;
      if (!ok || cancelled_) {
        finish = grpc::Status(grpc::StatusCode::CANCELLED, "watch ended by the client");
      } else if (waiting_ != nullptr) {
        writing_ = true;
        in_flight_ = std::move(waiting_);
        next = in_flight_.get();
      } else if (finish_after_.has_value()) {
        finish = std::move(*finish_after_);
      }
      if (finish.has_value()) ended_ = true;
    }
    if (finish.has_value()) Finish(std::move(*finish));
    if (next != nullptr) StartWrite(next);
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      if (ended_ || writing_) return;  // OnWriteDone finishes
      ended_ = true;
    }
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "watch ended by the client"));
  }

  void OnDone() override {
    owner_->Forget(this);
    slot_.reset();
    self_.reset();  // may destroy this
  }

 private:
  JobWatches* const owner_;
  const std::string job_id_;
  std::optional<StreamSlots::Slot> slot_;
  std::shared_ptr<Stream> self_;
  mutable absl::Mutex mu_;
  int64_t version_ ABSL_GUARDED_BY(mu_) = kNothing;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;  // Finish called
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  Event in_flight_ ABSL_GUARDED_BY(mu_);  // kept alive until its write is done
  Event waiting_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> finish_after_ ABSL_GUARDED_BY(mu_);
};

JobWatches::JobWatches(JobManager* jobs, Options options)
    : jobs_(jobs), options_(options), slots_(options.max_per_principal, options.max_total) {
  pump_ = std::thread([this] { Pump(); });
}

JobWatches::~JobWatches() { Shutdown(); }

grpc::ServerWriteReactor<v1::WatchJobEvent>* JobWatches::Open(const v1::WatchJobRequest& request,
                                                              const std::string& principal) {
  if (request.job_id().empty()) return new Refusal(MissingField("job_id"));
  absl::StatusOr<StreamSlots::Slot> slot = slots_.Acquire(principal);
  if (!slot.ok()) return new Refusal(ToGrpcStatus(slot.status()));
  auto stream = std::make_shared<Stream>(this, request.job_id(), *std::move(slot));
  stream->Own(stream);
  bool stopping = false;
  {
    absl::MutexLock lock(&mu_);
    stopping = stopping_;
    if (!stopping) {
      streams_.emplace(stream.get(), stream);
      fresh_ = true;
    }
  }
  if (stopping) {
    stream->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator is stopping"));
  }
  return stream.get();
}

grpc::ServerWriteReactor<v1::WatchJobEvent>* JobWatches::Refuse(grpc::Status status) {
  return new Refusal(std::move(status));
}

void JobWatches::Shutdown() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (const auto& [key, stream] : streams_) streams.push_back(stream);
  }
  for (const std::shared_ptr<Stream>& stream : streams) {
    stream->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator is stopping"));
  }
  if (pump_.joinable()) pump_.join();
}

void JobWatches::Forget(const Stream* stream) {
  absl::MutexLock lock(&mu_);
  streams_.erase(stream);
}

void JobWatches::Pump() {
  int64_t seen = -1;
  bool stored_waiting = false;  // some stream waits on a job not live yet
  absl::Time retry_at = absl::InfiniteFuture();
  while (true) {
    std::vector<std::shared_ptr<Stream>> streams;
    {
      absl::MutexLock lock(&mu_);
      auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stopping_ || !streams_.empty();
      };
      mu_.Await(absl::Condition(&idle));  // nothing to watch: no wake-ups
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.poll);
      if (stopping_) return;
      const int64_t changes = jobs_->changes();
      const bool retry = stored_waiting && absl::Now() >= retry_at;
      if (changes == seen && !fresh_ && !retry) continue;
      seen = changes;  // read before the pass: a change during it makes another
      fresh_ = false;
      streams.reserve(streams_.size());
      for (const auto& [key, stream] : streams_) streams.push_back(stream);
    }
    stored_waiting = Pass(streams);
    retry_at = absl::Now() + kStoredRetry;
  }
}

bool JobWatches::Pass(const std::vector<std::shared_ptr<Stream>>& streams) {
  // Streams whose last view is queued are left out: a client that stops
  // reading holds its final write, and must not make every pass read the
  // store for a finished job.
  absl::flat_hash_map<std::string, std::vector<Stream*>> by_job;
  for (const std::shared_ptr<Stream>& stream : streams) {
    if (!stream->settled()) by_job[stream->job_id()].push_back(stream.get());
  }
  bool stored_waiting = false;
  for (const auto& [job_id, watchers] : by_job) {
    absl::StatusOr<int64_t> version = jobs_->LiveVersion(job_id);
    if (version.ok()) {
      const bool behind = std::any_of(watchers.begin(), watchers.end(),
                                      [&](const Stream* s) { return s->version() != *version; });
      if (!behind) continue;
      auto event = std::make_shared<v1::WatchJobEvent>();
      version = jobs_->LiveVersion(job_id, event->mutable_job());
      if (version.ok()) {
        const bool last = IsFinal(event->job().state());
        for (Stream* stream : watchers) {
          if (stream->version() != *version) stream->Send(event, *version, last);
        }
        continue;
      }
    }
    // Not live: finished (its final view is stored), not live yet, or unknown.
    absl::StatusOr<v1::Job> stored = jobs_->Get(job_id);
    if (!stored.ok()) {
      for (Stream* stream : watchers) stream->End(ToGrpcStatus(stored.status()));
      continue;
    }
    const bool last = IsFinal(stored->state());
    auto event = std::make_shared<v1::WatchJobEvent>();
    *event->mutable_job() = *std::move(stored);
    if (!last) stored_waiting = true;
    for (Stream* stream : watchers) {
      if (last || stream->version() == kNothing) stream->Send(event, kStored, last);
    }
  }
  return stored_waiting;
}

}  // namespace tunefleet::server
