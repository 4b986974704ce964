// WatchStreams: many WatchJob calls of one job at once, on gRPC's callback
// client API (no thread per stream), spread over a few connections, with a
// tally of what they saw. Shared by load_bench's `watch` scenario and the
// integration tests.
#ifndef TUNEFLEET_BENCH_WATCH_STREAMS_H_
#define TUNEFLEET_BENCH_WATCH_STREAMS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tunefleet/v1/tuning_service.grpc.pb.h"

namespace tunefleet::bench {

// Thread-safety: safe for concurrent use.
class WatchStreams {
 public:
  // Streams go over `channels` connections (each a channel of its own made
  // with `credentials`) to `address`. Nothing opens yet.
  WatchStreams(const std::string& address,
               const std::shared_ptr<grpc::ChannelCredentials>& credentials, int channels);
  // Cancels every stream still open and waits for each to end.
  ~WatchStreams();

  // Opens `count` more streams watching `job_id`.
  void Open(int count, const std::string& job_id);
  // Whether, within `timeout`, at least `opened` streams saw a first event
  // and at least `ended` ended.
  bool Await(int opened, int ended, absl::Duration timeout);

  int opened() const;
  int ended() const;
  // How the ended streams ended, by status code.
  std::map<grpc::StatusCode, int> codes() const;
  // The last job state each ended stream saw, counted.
  std::map<v1::JobState, int> last_states() const;
  // The message of a RESOURCE_EXHAUSTED end (the last seen).
  std::string refusal() const;

 private:
  class Stream;
  void Opened();
  void Ended(const grpc::Status& status, v1::JobState last);

  std::vector<std::unique_ptr<v1::TuningService::Stub>> stubs_;
  std::vector<std::unique_ptr<Stream>> streams_;  // only Open and the destructor touch it
  mutable absl::Mutex mu_;
  int opened_ ABSL_GUARDED_BY(mu_) = 0;
  int ended_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<grpc::StatusCode, int> codes_ ABSL_GUARDED_BY(mu_);
  std::map<v1::JobState, int> last_states_ ABSL_GUARDED_BY(mu_);
  std::string refusal_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tunefleet::bench

#endif  // TUNEFLEET_BENCH_WATCH_STREAMS_H_
